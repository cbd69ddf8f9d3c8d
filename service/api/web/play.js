// The reference web client of guts (served at /play): how a browser plays at a table through
// the public API alone (openapi.yaml). No framework and no build step; the modules beside it:
// api.js (requests, credentials), i18n.js (strings), feed.js (the live feed), seat.js (the
// table drawn and the seat's controls), cards.js, words.js (events and results in words),
// create.js (table creation with every option), protection.js (a player's session, away and
// back, reality checks), verify.js and fairness.js (deck checks).
//
// The page keeps the table view (`GET /v1/tables/{id}`) as the truth it renders, fetches it
// again when the feed says the table moved, and words the reveal and the settlement from the
// feed's events and the finished hand's history (which names the hands shown).

import { $, actWith, api, button, element, forgetKey, keepKey, olderThan, serverNow, session, storedKey, tablePath } from "/play/api.js";
import { countdownRing, setRing } from "/play/cards.js";
import { buildRuleForm, renderRuleForm, ruleOverrides } from "/play/create.js";
import { follow } from "/play/feed.js";
import { startI18n, t } from "/play/i18n.js";
import { protectSeat, protectionEvent, renderProtection, rewordCheck, tickSession, wireProtection } from "/play/protection.js";
import { actions, standing, tableElement } from "/play/seat.js";
import { parsePasted, showVerification } from "/play/verify.js";
import { EventLog, learnNames, resultWords } from "/play/words.js";

const LINKS = "guts.links.";
const TIMED_PHASES = ["passing", "declaring", "drawing", "betting"]; // sessionStorage: the seat links this operator handed out, per table

const page = {
  table: null, // the table id
  seat: null, // this tab's seat (a player's tab), else null
  view: null, // the last table view
  last: 0, // the version of the last event received
  stop: null, // stops the live feed
  feed: "closed", // the feed's state
  shown: null, // the last showdown: {hand, cards, names} by seat
  result: null, // the last result: {resolved, names}
  said: null, // the version the status line was said at (cleared once the table moves on)
  deadline: null, // {at, total}: the hand's deadline and the time it gave, in ms
};

// --- what the page says --------------------------------------------------------------------

/** The status line: what the user just did. Cleared once the table moves past what it says
 * (the version the action made, when it answered one; else the table as it was then), so it
 * is never left saying something no longer true ("declare: done" after the hand ended). */
function say(text, result) {
  $("status").textContent = text;
  const made = result && Number.isInteger(result.version) ? result.version : null;
  page.said = made ?? (page.view ? page.view.version : 0);
}

/** A status line about the page, not the table (a link copied, the key kept): it stays until
 * the next message, whatever the table does meanwhile. */
function note(text) {
  $("status").textContent = text;
  page.said = null;
}

const act = actWith(say, t);
const log = new EventLog($("events"));

const post = (what, path, body) => act(what, () => api("POST", tablePath(page.table, path), body));

function feedState(state, seconds) {
  page.feed = state;
  const node = $("feed-state");
  node.textContent = t(`play.feed.${state}`, { seconds });
  node.dataset.state = state;
  document.body.classList.toggle("offline", state !== "live");
}

// --- the live feed -------------------------------------------------------------------------

function received(version, event) {
  page.last = version;
  if (event.type === "hand_dealt") page.shown = null;
  log.add(version, event);
  if (page.seat !== null) protectionEvent(event);
  if (event.type === "hand_resolved") showResult(event.data);
  refreshSoon();
}

let refreshing = null;
/** Fetch the table view again once the events that arrived together have been read. */
function refreshSoon() {
  clearTimeout(refreshing);
  refreshing = setTimeout(() => refresh().catch((error) => say(error.message)), 50);
}

/** The hand's result, then again with the hands' names once its history is read. */
async function showResult(resolved) {
  page.result = { resolved, names: {} };
  page.shown = { hand: resolved.hand, cards: resolved.shown || {}, names: {} };
  renderResult();
  offerHand(resolved.hand);
  try {
    const history = await api("GET", tablePath(page.table, `/hands/${resolved.hand}`));
    if (page.result.resolved !== resolved) return;
    page.result.names = history.hand_names || {};
    page.shown.names = page.result.names;
    renderResult();
    if (page.view) render(page.view);
  } catch {
    // Without the history the result stays in words without the hands' names.
  }
}

function renderResult() {
  $("outcome").textContent = page.result ? resultWords(page.result.resolved, page.result.names) : "";
}

// --- rendering -----------------------------------------------------------------------------

async function refresh() {
  const view = await api("GET", tablePath(page.table));
  if (olderThan(view, page.view)) return;
  page.view = view;
  render(view);
}

function render(view) {
  learnNames(view.seats);
  if (page.said !== null && view.version > page.said) {
    $("status").textContent = "";
    page.said = null;
  }
  $("table").hidden = false;
  $("table-id").textContent = view.table_id;
  $("table-summary").textContent = t("play.summary", {
    preset: view.rules.preset, ante: view.rules.ante, cards: view.rules.cards, status: t(`common.status.${view.status}`),
  });
  const hand = view.hand;
  const keepShown = page.shown && (!hand || hand.number === page.shown.hand);
  $("felt").replaceChildren(tableElement(view, page.seat, keepShown ? page.shown : null));
  $("hand-summary").textContent = hand ? t("play.hand_phase", { hand: hand.number, phase: t(`common.phase.${hand.phase}`) }) : t("play.no_hand");
  // A countdown only while the table waits for players (not at the showdown, which waits for
  // the operator or the platform).
  const timed = hand && hand.deadline && TIMED_PHASES.includes(hand.phase);
  const deadline = timed ? Date.parse(hand.deadline) : null;
  if (!deadline) page.deadline = null;
  else if (!page.deadline || page.deadline.at !== deadline) page.deadline = { at: deadline, total: Math.max(1000, deadline - serverNow()) };
  if (page.seat !== null) renderSeat(view);
  tick();
}

function offerHand(number) {
  if (!$("hand-number").dataset.touched) $("hand-number").value = String(number);
}

function renderSeat(view) {
  const mine = view.seats.find((s) => s.seat === page.seat);
  $("you").textContent = mine
    ? t("play.you", { seat: mine.seat, name: mine.player_id, chips: mine.stack, status: standing(mine) })
    : t("common.seat_n", { seat: page.seat });
  renderProtection(mine && mine.status !== "left" ? mine : null);
  const controls = actions(view, page.seat, post);
  const focused = document.activeElement && $("act").contains(document.activeElement);
  $("act").replaceChildren(...controls);
  // Keep the keyboard where it was: on the first of the new controls, if it was on the old.
  if (focused && controls.length) (controls[0].querySelector("button, input") || controls[0]).focus();
}

/** The countdown ring and seconds, by the server's clock. */
function tick() {
  if (page.seat !== null) tickSession();
  const node = $("countdown");
  const ring = $("ring").firstChild;
  if (!page.deadline) {
    node.textContent = t("play.no_deadline");
    node.removeAttribute("datetime");
    setRing(ring, 0);
    return;
  }
  const leftMs = page.deadline.at - serverNow();
  const left = Math.max(0, Math.ceil(leftMs / 1000));
  node.dateTime = new Date(page.deadline.at).toISOString();
  node.textContent = left > 0 ? t("play.seconds_left", { seconds: left }) : t("play.deadline_passed");
  setRing(ring, leftMs / page.deadline.total);
}

// --- the operator --------------------------------------------------------------------------

async function openTable(tableId) {
  if (page.stop) page.stop();
  page.table = tableId;
  page.result = null;
  page.shown = null;
  log.clear();
  if (page.seat !== null) protectSeat(tableId, page.seat);
  await refresh();
  page.last = page.view.version; // the feed sends what comes after the view just rendered
  page.stop = follow(tableId, page.last, received, feedState);
  if (page.seat === null) {
    $("manage").hidden = false;
    renderLinks();
  }
}

function renderLinks() {
  const links = JSON.parse(sessionStorage.getItem(LINKS + page.table) || "[]");
  $("seat-links").replaceChildren(...links.map(({ seat, player, url }) => {
    const item = element("li");
    const copy = button(t("play.copy_link"), async () => {
      try {
        await navigator.clipboard.writeText(url);
        note(t("play.copied", { name: player }));
      } catch {
        note(t("play.copy_failed"));
      }
    }, { "aria-label": t("play.copy_link_for", { name: player }) });
    item.append(element("a", t("play.seat_link", { seat, name: player }), { href: url, target: "_blank", rel: "noopener" }), " ", copy);
    return item;
  }));
}

function seatLink(seat, token) {
  const fragment = new URLSearchParams({ table: page.table, seat: String(seat), token });
  return `${location.origin}/play#${fragment}`;
}

function wireOperator() {
  if (storedKey()) $("key").value = storedKey();
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    keepKey($("key").value);
    note(t("common.key_kept"));
  });
  $("forget-key").addEventListener("click", () => {
    forgetKey();
    $("key").value = "";
    note(t("common.key_forgotten"));
  });
  $("create-form").addEventListener("submit", act(t("play.create.action"), async () => {
    const created = await api("POST", "/v1/tables", {
      preset: $("preset").value,
      ante: Number($("ante").value),
      decision_timeout_s: Number($("timeout").value),
      rules: ruleOverrides($("rule-options")),
    });
    $("open-table").value = created.table_id;
    await openTable(created.table_id);
  }));
  $("open-form").addEventListener("submit", act(t("play.open.action"), () => openTable($("open-table").value.trim())));
  $("seat-form").addEventListener("submit", act(t("play.seat.action"), async () => {
    const player = $("player-id").value.trim();
    const seated = await api("POST", tablePath(page.table, "/players"), { player_id: player, buy_in: Number($("buy-in").value) });
    const links = JSON.parse(sessionStorage.getItem(LINKS + page.table) || "[]");
    links.push({ seat: seated.seat, player, url: seatLink(seated.seat, seated.token) });
    sessionStorage.setItem(LINKS + page.table, JSON.stringify(links));
    renderLinks();
    $("player-id").value = "";
  }));
  $("deal").addEventListener("click", post(t("play.deal"), "/deal", {}));
  $("resolve").addEventListener("click", post(t("play.resolve"), "/resolve", {}));
}

function wireHistory() {
  $("hand-number").addEventListener("input", () => { $("hand-number").dataset.touched = "1"; });
  $("history-form").addEventListener("submit", act(t("common.verify.action"), async () => {
    if (!page.table) throw new Error(t("common.verify.open_first"));
    const history = await api("GET", tablePath(page.table, `/hands/${Number($("hand-number").value)}`));
    $("pasted").value = JSON.stringify(history, null, 1);
    await showVerification(history, $("verdict"), $("checks"));
  }));
  $("paste-form").addEventListener("submit", act(t("common.verify.paste_action"), async () => {
    await showVerification(parsePasted($("pasted").value), $("verdict"), $("checks"));
  }));
}

/** After a language switch: everything drawn from strings, drawn again. */
function rerender() {
  renderRuleForm($("rule-options"));
  if (page.view) render(page.view);
  if (page.table && page.seat === null) renderLinks();
  renderResult();
  rewordCheck();
  feedState(page.feed, 0);
}

// --- start ---------------------------------------------------------------------------------

async function start() {
  await startI18n(rerender);
  $("ring").append(countdownRing());
  wireOperator();
  wireHistory();
  feedState("closed", 0);
  setInterval(tick, 250);
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get("token") && fragment.get("table") && fragment.get("seat")) {
    // A player's tab: act for the seat whose token the link holds.
    session.token = fragment.get("token");
    page.seat = Number(fragment.get("seat"));
    $("operator").hidden = true;
    $("player").hidden = false;
    wireProtection(post);
    await openTable(fragment.get("table")).catch((error) => say(error.message));
  } else {
    await buildRuleForm($("rule-options"), $("preset"));
  }
  document.body.dataset.ready = "1";
}

start();
