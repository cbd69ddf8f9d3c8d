// The back office's player protection: a player's limits (loss limit, reality check, session
// limit, time-out, exclusion), the changes that wait out their 24 h, their 24 h net loss and
// cool-down, all in words, and one form that changes the five settable fields (an operator's
// key only); and the tenant's protection profile with the defaults it gives (an operator
// changes it). A refusal naming a field (422 with `errors`) is shown beside that field.

import { $, api, element } from "/play/api.js";
import { language, t } from "/play/i18n.js";

/** The settable fields: the form's input, and the key of its name in the lists. */
const FIELDS = {
  loss_limit_24h: { input: "loss-limit", name: "admin.limits.loss_limit", kind: "amount" },
  reality_check_minutes: { input: "reality-check", name: "admin.limits.reality_check", kind: "amount" },
  session_limit_minutes: { input: "session-limit", name: "admin.limits.session_limit", kind: "amount" },
  timeout_until: { input: "timeout-until", name: "admin.limits.timeout", kind: "moment" },
  excluded_until: { input: "excluded-until", name: "admin.limits.exclusion", kind: "moment" },
};
/** The fields a PUT must carry (the others, absent, stay as they are, a pending change too). */
const REQUIRED = new Set(["loss_limit_24h", "excluded_until"]);

/** The profiles: their names and what else they say (the lengths a break may have). */
const PROFILES = {
  default: { name: "admin.profile.name.default", about: "admin.profile.about.default" },
  ukgc: { name: "admin.profile.name.ukgc", about: "admin.profile.about.ukgc" },
  agco: { name: "admin.profile.name.agco", about: "admin.profile.about.agco" },
};
const profileName = (profile) => (PROFILES[profile] ? t(PROFILES[profile].name) : profile);

const shown = { limits: null, profile: null };

/** The page's locale: the browser's own tag when it is of the page's language ("en-GB"
 * writes the day first), else the language alone. */
function locale() {
  const tags = navigator.languages || [navigator.language];
  return tags.find((tag) => String(tag).toLowerCase().split("-")[0] === language()) || language();
}

/** A moment (RFC 3339) in the page's locale, with the date and the time. */
function when(moment) {
  const options = { dateStyle: "medium", timeStyle: "short" };
  return new Intl.DateTimeFormat(locale(), options).format(new Date(moment));
}

/** A field's value in words: "no limit", "every 60 minutes", a date, "not excluded". */
function words(field, value) {
  switch (field) {
    case "loss_limit_24h":
      return value === null ? t("admin.limits.no_limit") : t("admin.limits.chips", { amount: value });
    case "reality_check_minutes":
      return value === null ? t("admin.limits.no_reality_check") : t("admin.limits.every", { minutes: value });
    case "session_limit_minutes":
      return value === null ? t("admin.limits.no_limit") : t("admin.limits.per_session", { minutes: value });
    case "timeout_until":
      return breakWords(value, "admin.limits.no_timeout");
    default:
      return breakWords(value, "admin.limits.not_excluded");
  }
}

/** A time-out's or exclusion's end: none, running until a date, or over since one. */
function breakWords(until, none) {
  if (!until) return t(none);
  if (new Date(until) <= new Date()) return t("admin.limits.ended", { none: t(none), date: when(until) });
  return t("admin.limits.until", { date: when(until) });
}

/** An RFC 3339 moment as a datetime-local input's value (this machine's local time). */
function localInput(moment) {
  if (!moment) return "";
  const at = new Date(moment);
  return new Date(at.getTime() - at.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

function definitions(pairs) {
  const list = element("dl", undefined, { class: "facts" });
  for (const [key, value] of pairs) list.append(element("dt", t(key)), element("dd", value));
  return list;
}

// --- a player's limits -----------------------------------------------------------------------

const limitsPath = (player) => `/v1/players/${encodeURIComponent(player)}/limits`;

function renderLimits() {
  const limits = shown.limits;
  if (!limits) return;
  const pairs = Object.entries(FIELDS).map(([field, { name }]) => [name, words(field, limits[field])]);
  pairs.push(["admin.limits.net_loss", t("admin.limits.chips", { amount: limits.net_loss_24h })]);
  pairs.push(["admin.limits.cool_down_until",
    limits.cool_down_until ? t("admin.limits.until", { date: when(limits.cool_down_until) }) : t("admin.limits.no_cool_down")]);
  pairs.push(["admin.profile.title", profileName(limits.profile)]);
  const pending = Object.entries(limits.pending || {});
  const items = pending.map(([field, change]) => element("li", t("admin.limits.pending_change", {
    field: t(FIELDS[field] ? FIELDS[field].name : field), value: words(field, change.value), date: when(change.effective_at),
  })));
  const list = element("ul", undefined, { id: "limits-pending" });
  list.append(...items);
  if (!items.length) list.append(element("li", t("admin.limits.nothing_pending")));
  // Only an operator changes limits: an auditor's key sees the values and no form.
  $("limits-set").hidden = document.body.dataset.role !== "operator";
  $("limits-view").replaceChildren(
    element("h3", t("admin.limits.of", { player: limits.player_id })), definitions(pairs),
    element("h4", t("admin.limits.pending")), list);
}

function fillForm(limits) {
  for (const [field, { input, kind }] of Object.entries(FIELDS)) {
    const value = limits[field];
    $(input).value = kind === "moment" ? localInput(value && new Date(value) > new Date() ? value : null) : value ?? "";
    $(input).dataset.loaded = $(input).value;
  }
  clearRefusals();
}

function showLimits(limits) {
  shown.limits = limits;
  renderLimits();
  fillForm(limits);
}

export async function loadLimits(player = $("limits-player").value.trim()) {
  showLimits(await api("GET", limitsPath(player)));
}

/** The form as a PUT body: empty is none. A field left as it was loaded is not sent (so a
 * change waiting out its 24 h stays), but for the two the API always needs: those are sent as
 * they were read (to the second, which the input does not show), cancelling a waiting change. */
function asked() {
  const body = {};
  for (const [field, { input, kind }] of Object.entries(FIELDS)) {
    const text = $(input).value;
    if (text === $(input).dataset.loaded) {
      if (REQUIRED.has(field)) body[field] = shown.limits[field];
    } else if (text === "") body[field] = null;
    else body[field] = kind === "moment" ? new Date(text).toISOString() : Number(text);
  }
  return body;
}

function clearRefusals() {
  for (const { input } of Object.values(FIELDS)) {
    $(input).removeAttribute("aria-invalid");
    $(`${input}-error`).textContent = "";
  }
}

/** A 422 naming fields of the form: each message beside its field (and the error still
 * thrown, for the status line, as the page says every refusal). */
function showRefusal(error) {
  const named = (error.problem && error.problem.errors) || {};
  for (const [field, messages] of Object.entries(named)) {
    if (!FIELDS[field]) continue;
    const input = $(FIELDS[field].input);
    input.setAttribute("aria-invalid", "true");
    $(`${FIELDS[field].input}-error`).textContent = [].concat(messages).join(" ");
  }
}

export async function saveLimits() {
  clearRefusals();
  try {
    showLimits(await api("PUT", limitsPath(shown.limits.player_id), asked()));
  } catch (error) {
    if (error.status === 422) showRefusal(error);
    throw error;
  }
}

// --- the tenant's protection profile ---------------------------------------------------------

function renderProfile() {
  const chosen = shown.profile;
  if (!chosen) return;
  const pairs = [["admin.profile.title", profileName(chosen.profile)]];
  for (const [field, { name }] of Object.entries(FIELDS)) {
    if (field in chosen.defaults) pairs.push([name, words(field, chosen.defaults[field])]);
  }
  $("profile-view").replaceChildren(
    element("h4", t("admin.profile.defaults")), definitions(pairs),
    element("p", t((PROFILES[chosen.profile] || PROFILES.default).about), { class: "hint" }));
  $("profile-choice").value = chosen.profile;
}

export async function loadProfile() {
  shown.profile = await api("GET", "/v1/protection/profile");
  renderProfile();
}

export async function saveProfile() {
  shown.profile = await api("PUT", "/v1/protection/profile", { profile: $("profile-choice").value });
  renderProfile();
  if (shown.limits) await loadLimits(shown.limits.player_id); // their defaults may change with it
}

/** Say it all again (in the language now chosen, for the role the key now has). */
export function rerenderProtection() {
  renderLimits();
  renderProfile();
}
