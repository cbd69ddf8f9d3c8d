// The back office of guts (served at /admin): a tenant's operator (or auditor, read-only)
// over the public API alone. This module: the key and the role it has, the tables (list,
// filter by status, open one live with deal, resolve and end), and the wiring of the panels
// in admin-panels.js (hands, ledger, wallet, webhooks), admin-limits.js (a player's limits,
// the protection profile) and admin-audits.js (audits, collusion reports, quarantine). Strings
// come from i18n.js; nothing from another host.

import { $, actWith, api, button, element, forgetKey, keepKey, olderThan, storedKey, tablePath, withQuery } from "/play/api.js";
import { follow } from "/play/feed.js";
import { startI18n, t } from "/play/i18n.js";
import { EventLog, learnNames } from "/play/words.js";
import {
  dataTable, loadHands, loadLedger, loadWallet, loadWebhooks, pager,
  registerWebhook, renderWebhookEvents, reportErrorsWith,
} from "/play/admin-panels.js";
import { loadLimits, loadProfile, rerenderProtection, saveLimits, saveProfile } from "/play/admin-limits.js";
import { loadQuarantine, readAudit, readReport, startAudit, startReport } from "/play/admin-audits.js";

const office = { role: null, table: null, view: null, stop: null, feed: "closed", links: [] };

// --- what the page says --------------------------------------------------------------------

function say(text) {
  $("status").textContent = text;
}

const act = actWith(say, t);
const log = new EventLog($("events"), 80);

// --- the key and its role ------------------------------------------------------------------

/** Operator or auditor: an auditor may not list webhooks (403), an operator may. */
async function findRole() {
  if (!storedKey()) {
    office.role = null;
  } else {
    try {
      await api("GET", "/v1/webhooks");
      office.role = "operator";
    } catch (error) {
      office.role = error.status === 403 ? "auditor" : null;
      if (office.role === null) say(t("common.failed", { what: t("admin.role.check"), why: error.message }));
    }
  }
  document.body.dataset.role = office.role || "none";
  $("role").textContent = office.role ? t(`admin.role.${office.role}`) : t("admin.role.none");
  rerenderProtection();
  if (office.role) {
    await loadProfile().catch((error) => say(t("common.failed", { what: t("admin.profile.title"), why: error.message })));
  }
}

// --- tables --------------------------------------------------------------------------------

/** A page of the tables, of `status` only when one is chosen (the API filters: a page may hold
 * fewer than 50, or none, and still have a next one). */
async function loadTables(after = "", status = $("tables-status").value) {
  const page = await api("GET", withQuery("/v1/tables", { status, after, limit: 50 }));
  const open = (s) => button(t("admin.tables.open"), act(t("admin.tables.open"), () => openTable(s.table_id)),
    { "aria-label": t("admin.tables.open_label", { table: s.table_id }) });
  $("tables-list").replaceChildren(dataTable([
    ["admin.tables.id", (s) => s.table_id], ["admin.tables.status", (s) => t(`common.status.${s.status}`)],
    ["admin.tables.preset", (s) => s.rules.preset], ["admin.tables.ante", (s) => s.rules.ante],
    ["admin.tables.created", (s) => s.created_at], ["admin.tables.version", (s) => s.version],
    ["admin.tables.open", open],
  ], page.tables), pager(after ? () => loadTables("", status) : null, page.next_after,
    (next) => loadTables(next, status).catch((e) => say(e.message))));
}

async function refreshLive() {
  const view = await api("GET", tablePath(office.table));
  if (olderThan(view, office.view)) return;
  office.view = view;
  learnNames(view.seats);
  $("live").hidden = false;
  $("live-id").textContent = view.table_id;
  const hand = view.hand ? t("play.hand_phase", { hand: view.hand.number, phase: t(`common.phase.${view.hand.phase}`) }) : t("play.no_hand");
  $("live-summary").textContent = `${t("play.summary", {
    preset: view.rules.preset, ante: view.rules.ante, cards: view.rules.cards, status: t(`common.status.${view.status}`),
  })} ${hand} ${t("admin.tables.pots", { pot: view.pot, low: view.low_pot, reserve: view.reserve, side: view.side_pot })}`;
  $("live-seats").replaceChildren(dataTable([
    ["admin.tables.seat", (s) => s.seat], ["admin.player", (s) => s.player_id],
    ["admin.tables.stack", (s) => s.stack], ["admin.tables.status", (s) => t(`common.status.${s.status}`)],
  ], view.seats));
}

function feedState(state, seconds) {
  office.feed = state;
  $("feed-state").textContent = t(`play.feed.${state}`, { seconds });
  $("feed-state").dataset.state = state;
}

let refreshing = null;
function received(version, event) {
  log.add(version, event);
  clearTimeout(refreshing);
  refreshing = setTimeout(() => refreshLive().catch((e) => say(e.message)), 50);
}

async function openTable(tableId) {
  if (office.stop) office.stop();
  office.table = tableId;
  office.links = [];
  $("seat-links").replaceChildren();
  log.clear();
  $("audit-table").value = tableId;
  await refreshLive();
  office.stop = follow(tableId, office.view.version, received, feedState);
  $("live").scrollIntoView({ block: "start" });
}

function renderLinks() {
  $("seat-links").replaceChildren(...office.links.map(({ seat, player, url }) => {
    const item = element("li");
    item.append(element("a", t("play.seat_link", { seat, name: player }), { href: url, target: "_blank", rel: "noopener" }));
    return item;
  }));
}

function wireTables() {
  $("tables-form").addEventListener("submit", act(t("admin.tables.title"), () => loadTables()));
  $("create-form").addEventListener("submit", act(t("play.create.action"), async () => {
    const created = await api("POST", "/v1/tables", {
      preset: $("preset").value, ante: Number($("ante").value), decision_timeout_s: Number($("timeout").value),
    });
    await openTable(created.table_id);
  }));
  $("seat-form").addEventListener("submit", act(t("play.seat.action"), async () => {
    const player = $("player-id").value.trim();
    const seated = await api("POST", tablePath(office.table, "/players"), {
      player_id: player, buy_in: Number($("buy-in").value), funding: $("funding").value,
    });
    const fragment = new URLSearchParams({ table: office.table, seat: String(seated.seat), token: seated.token });
    office.links.push({ seat: seated.seat, player, url: `${location.origin}/play#${fragment}` });
    renderLinks();
    $("player-id").value = "";
  }));
  const post = (what, path) => act(what, () => api("POST", tablePath(office.table, path), {}));
  $("deal").addEventListener("click", post(t("play.deal"), "/deal"));
  $("resolve").addEventListener("click", post(t("play.resolve"), "/resolve"));
  $("end").addEventListener("click", post(t("admin.tables.end"), "/end"));
}

// --- the panels ----------------------------------------------------------------------------

function wirePanels() {
  reportErrorsWith(say);
  $("hands-form").addEventListener("submit", act(t("admin.hands.title"), () => loadHands()));
  $("ledger-form").addEventListener("submit", act(t("admin.ledger.title"), () => loadLedger()));
  $("wallet-form").addEventListener("submit", act(t("admin.wallet.title"), () => loadWallet()));
  $("limits-form").addEventListener("submit", act(t("admin.limits.title"), () => loadLimits()));
  $("limits-set").addEventListener("submit", act(t("admin.limits.set"), () => saveLimits()));
  $("profile-form").addEventListener("submit", act(t("admin.profile.save"), () => saveProfile()));
  $("webhook-form").addEventListener("submit", act(t("admin.webhooks.register"), () => registerWebhook()));
  $("webhooks-load").addEventListener("click", act(t("admin.webhooks.title"), () => loadWebhooks()));
  $("audit-form").addEventListener("submit", act(t("admin.audits.start"), () => startAudit()));
  $("audit-read").addEventListener("submit", act(t("admin.audits.read"), () => readAudit()));
  $("report-form").addEventListener("submit", act(t("admin.reports.start"), () => startReport()));
  $("report-read").addEventListener("submit", act(t("admin.reports.read"), () => readReport()));
  $("quarantine-load").addEventListener("click", act(t("admin.quarantine.title"), () => loadQuarantine()));
}

function wireKey() {
  if (storedKey()) $("key").value = storedKey();
  $("key-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    keepKey($("key").value);
    await findRole();
    say(t("common.key_kept"));
  });
  $("forget-key").addEventListener("click", async () => {
    forgetKey();
    $("key").value = "";
    await findRole();
    say(t("common.key_forgotten"));
  });
}

async function presets() {
  const response = await fetch("/play/rule-options.json", { cache: "no-cache" });
  const kinds = await response.json();
  $("preset").replaceChildren(...Object.keys(kinds.presets).map((name) => element("option", name, { value: name })));
  $("preset").value = "three-card";
}

function rerender() {
  renderWebhookEvents();
  renderLinks();
  feedState(office.feed, 0);
  $("role").textContent = office.role ? t(`admin.role.${office.role}`) : t("admin.role.none");
  rerenderProtection();
  if (office.view) refreshLive().catch((e) => say(e.message));
}

async function start() {
  await startI18n(rerender);
  renderWebhookEvents();
  wireKey();
  wireTables();
  wirePanels();
  feedState("closed", 0);
  await presets();
  await findRole();
  document.body.dataset.ready = "1";
}

start();
