// The back office's panels over the read models: hands (with the in-browser verifier), the
// ledger, wallet transactions, webhooks and their deliveries (a player's limits and protection:
// admin-limits.js).
// Also the small helpers every panel uses: a table of rows and a pager.

import { $, api, button, element, withQuery } from "/play/api.js";
import { handWords } from "/play/cards.js";
import { t } from "/play/i18n.js";
import { showVerification } from "/play/verify.js";

/** A table of `rows`: `columns` are [header key, row -> text or node]. */
export function dataTable(columns, rows, caption) {
  const wrap = element("div", undefined, { class: "scroll" });
  const table = element("table");
  if (caption) table.append(element("caption", caption));
  const head = element("tr");
  // A header is a string key, or {text} for a name that is the API's own (a field name).
  for (const [key] of columns) head.append(element("th", typeof key === "string" ? t(key) : key.text, { scope: "col" }));
  const thead = element("thead");
  thead.append(head);
  const body = element("tbody");
  for (const row of rows) {
    const tr = element("tr");
    for (const [, cell] of columns) {
      const value = cell(row);
      const td = element("td");
      if (value instanceof Node) td.append(value);
      else td.textContent = value === null || value === undefined ? "" : String(value);
      tr.append(td);
    }
    body.append(tr);
  }
  table.append(thead, body);
  wrap.append(table);
  if (!rows.length) wrap.append(element("p", t("admin.none"), { class: "hint" }));
  return wrap;
}

/** A pager: "first page" when not on it, "next page" while there is one. */
export function pager(onFirst, next, onNext) {
  const node = element("div", undefined, { class: "pager" });
  if (onFirst) node.append(button(t("admin.first_page"), onFirst));
  if (next !== null && next !== undefined) node.append(button(t("admin.next_page"), () => onNext(next)));
  return node;
}

/** A calendar day as the start of that day in UTC (RFC 3339), or "" for none. */
export const dayStart = (day) => (day ? `${day}T00:00:00Z` : "");
/** The moment after a calendar day (UTC): "to" is exclusive. */
export function dayAfter(day) {
  if (!day) return "";
  const next = new Date(`${day}T00:00:00Z`);
  next.setUTCDate(next.getUTCDate() + 1);
  return next.toISOString().replace(".000Z", "Z");
}

// --- hands ---------------------------------------------------------------------------------

function handNames(history) {
  const names = Object.entries(history.hand_names || {});
  return names.map(([seat, n]) => `${(history.players || {})[seat] || seat}: ${handWords(n.high)}`).join("; ");
}

export async function loadHands(after = "") {
  const query = {
    player_id: $("hands-player").value.trim(), table_id: $("hands-table").value.trim(),
    from: dayStart($("hands-from").value), to: dayAfter($("hands-to").value), after, limit: 20,
  };
  const page = await api("GET", withQuery("/v1/hands", query));
  const columns = [
    ["admin.hands.hand", (h) => h.hand_id],
    ["admin.hands.players", (h) => Object.values(h.players || {}).join(", ")],
    ["admin.hands.ended", (h) => h.ended_at || ""],
    ["admin.hands.outcome", (h) => (h.outcome ? t(`admin.outcome.${h.outcome.outcome}`) : t(`admin.hands.${h.status}`))],
    ["admin.hands.names", handNames],
    ["admin.hands.verify", (h) => button(t("admin.hands.verify_action"), () => showVerification(h, $("verdict"), $("checks")),
      { "aria-label": t("admin.hands.verify_label", { hand: h.hand_id }) })],
  ];
  $("hands-list").replaceChildren(dataTable(columns, page.hands),
    pager(after ? () => loadHands() : null, page.next_after, (next) => loadHands(next)));
}

// --- the ledger and the wallet -------------------------------------------------------------

export async function loadLedger(after = "") {
  const query = {
    player_id: $("ledger-player").value.trim(), table_id: $("ledger-table").value.trim(),
    limit: $("ledger-limit").value, after,
  };
  const page = await api("GET", withQuery("/v1/ledger", query));
  const columns = [
    ["admin.ledger.at", (e) => e.at], ["admin.ledger.player", (e) => e.player_id],
    ["admin.ledger.table", (e) => e.table_id], ["admin.ledger.hand", (e) => e.hand],
    ["admin.ledger.kind", (e) => e.kind], ["admin.ledger.amount", (e) => e.amount],
    ["admin.ledger.balance", (e) => e.balance_after], ["admin.ledger.tx", (e) => e.tx_id],
  ];
  $("ledger-list").replaceChildren(dataTable(columns, page.entries),
    pager(after ? () => loadLedger() : null, page.next_after, (next) => loadLedger(next)));
}

export async function loadWallet(after = "") {
  try {
    const page = await api("GET", withQuery("/v1/wallet/transactions", { player_id: $("wallet-player").value.trim(), after }));
    const columns = [
      ["admin.wallet.created", (x) => x.created_at], ["admin.wallet.kind", (x) => t(`admin.wallet.kind.${x.kind}`)],
      ["admin.wallet.reason", (x) => t(`admin.wallet.reason.${x.reason}`)], ["admin.ledger.player", (x) => x.player_id],
      ["admin.ledger.table", (x) => x.table_id], ["admin.wallet.amount", (x) => x.amount],
      ["admin.wallet.currency", (x) => x.currency], ["admin.wallet.status", (x) => t(`admin.wallet.status.${x.status}`)],
      ["admin.wallet.attempts", (x) => x.attempts], ["admin.wallet.settled", (x) => x.settled_at || ""],
      ["admin.ledger.tx", (x) => x.transaction_id],
    ];
    $("wallet-list").replaceChildren(dataTable(columns, page.transactions),
      pager(after ? () => loadWallet() : null, page.next_after, (next) => loadWallet(next)));
  } catch (error) {
    // The wallet's transactions are a newer read model: a server without them answers 404.
    if (error.status !== 404) throw error;
    $("wallet-list").replaceChildren(element("p", t("admin.wallet.unavailable"), { class: "hint" }));
  }
}

// --- webhooks ------------------------------------------------------------------------------

export const WEBHOOK_EVENTS = ["hand_finished", "hand_voided", "player_seated", "chips_added", "player_cashed_out", "table_ended"];

export function renderWebhookEvents() {
  const box = $("webhook-events");
  const checked = new Set([...box.querySelectorAll("input:checked")].map((i) => i.value));
  const fresh = !box.querySelector("input");
  box.querySelectorAll("input, label").forEach((node) => node.remove());
  for (const name of WEBHOOK_EVENTS) {
    const id = `webhook-event-${name}`;
    const input = element("input", undefined, { type: "checkbox", id, value: name });
    input.checked = fresh || checked.has(name);
    box.append(input, element("label", t(`admin.webhooks.event.${name}`), { for: id }));
  }
}

export async function registerWebhook() {
  const events = [...$("webhook-events").querySelectorAll("input:checked")].map((i) => i.value);
  await api("POST", "/v1/webhooks", { url: $("webhook-url").value.trim(), events });
  $("webhook-url").value = "";
  await loadWebhooks();
}

export async function loadWebhooks() {
  const { webhooks } = await api("GET", "/v1/webhooks");
  $("webhooks-list").replaceChildren(dataTable([
    ["admin.webhooks.id", (w) => w.webhook_id], ["admin.webhooks.url", (w) => w.url],
    ["admin.webhooks.events", (w) => w.events.join(", ")],
    ["admin.webhooks.deliveries", (w) => button(t("admin.webhooks.show_deliveries"), () => loadDeliveries(w.webhook_id).catch(report),
      { "aria-label": t("admin.webhooks.deliveries_of", { url: w.url }) })],
  ], webhooks));
}

let report = () => {};
/** Where the panels' background errors are said (the status line). */
export function reportErrorsWith(say) {
  report = (error) => say(error.message);
}

export async function loadDeliveries(webhookId, after = "") {
  const path = withQuery(`/v1/webhooks/${encodeURIComponent(webhookId)}/deliveries`, { after, limit: 20 });
  const page = await api("GET", path);
  const redeliver = (d) => button(t("admin.webhooks.redeliver"), async () => {
    try {
      await api("POST", `/v1/webhooks/${encodeURIComponent(webhookId)}/deliveries/${encodeURIComponent(d.delivery_id)}/redeliver`);
      report(new Error(t("admin.webhooks.redelivering", { id: d.delivery_id })));
      await loadDeliveries(webhookId, after);
    } catch (error) {
      report(error);
    }
  }, { "aria-label": t("admin.webhooks.redeliver_label", { id: d.delivery_id }) });
  $("deliveries").replaceChildren(element("h3", t("admin.webhooks.deliveries_title", { id: webhookId })), dataTable([
    ["admin.webhooks.delivery", (d) => d.delivery_id], ["admin.webhooks.event_col", (d) => d.event],
    ["admin.webhooks.table", (d) => d.table_id], ["admin.webhooks.state", (d) => d.status],
    ["admin.webhooks.attempts", (d) => d.attempts], ["admin.webhooks.last", (d) => d.last_status ?? d.last_error ?? ""],
    ["admin.webhooks.redeliver", redeliver],
  ], page.deliveries), pager(after ? () => loadDeliveries(webhookId) : null, page.next_after, (next) => loadDeliveries(webhookId, next)));
}
