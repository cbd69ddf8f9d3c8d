// The back office's checks: audits (start one, read its report with the table's log and the
// first bad event highlighted), collusion reports (start, read) and the quarantined tables
// (`/readyz`'s `quarantined`).

import { $, api, element, tablePath } from "/play/api.js";
import { t } from "/play/i18n.js";
import { eventWords, learnNames } from "/play/words.js";
import { dataTable, dayAfter, dayStart } from "/play/admin-panels.js";

const POLL_MS = 500;
const POLL_FOR_MS = 120000;

/** Read `path` until its status is finished or failed (a job on the workers), or give up. */
async function untilDone(path, show) {
  const until = Date.now() + POLL_FOR_MS;
  for (;;) {
    const record = await api("GET", path);
    show(record);
    if (record.status === "finished" || record.status === "failed" || Date.now() > until) return record;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

// --- audits --------------------------------------------------------------------------------

export async function startAudit() {
  const table = $("audit-table").value.trim();
  const started = await api("POST", tablePath(table, "/audit"));
  $("audit-id").value = started.audit_id;
  await readAudit();
}

export async function readAudit() {
  const id = $("audit-id").value.trim();
  const record = await untilDone(`/v1/audits/${encodeURIComponent(id)}`, showAuditStatus);
  if (record.status === "finished" && record.result) await showAuditReport(record.result);
}

function showAuditStatus(record) {
  $("audit-report").replaceChildren(element("p", t("admin.audits.status", { id: record.audit_id, status: t(`admin.job.${record.status}`) })));
}

async function showAuditReport(result) {
  const bad = result.first_discrepancy;
  const parts = [];
  if (result.ok) {
    parts.push(element("p", t("admin.audits.ok", { table: result.table_id, events: result.events_checked }), { class: "report-ok" }));
  } else if (bad) {
    parts.push(element("p", t("admin.audits.bad", { version: bad.version, type: bad.event_type, kind: bad.kind, problem: bad.problem }), { class: "report-bad" }));
  } else {
    parts.push(element("p", t("admin.audits.error", { error: result.error || "" }), { class: "report-bad" }));
  }
  $("audit-report").replaceChildren(...parts);
  if (!bad) return;
  // The table's log, the first bad event highlighted (when the log can still be read).
  try {
    const { events } = await api("GET", tablePath(result.table_id, "/events"));
    for (const e of events) if (e.type === "player_seated") learnNames([{ seat: e.data.seat, player_id: e.data.player_id }]);
    const table = dataTable([
      ["admin.audits.version", (e) => e.version], ["admin.audits.type", (e) => e.type], ["admin.audits.words", (e) => eventWords(e)],
    ], events, t("admin.audits.log", { table: result.table_id }));
    const row = [...table.querySelectorAll("tbody tr")][events.findIndex((e) => e.version === bad.version)];
    if (row) markBad(row, bad);
    $("audit-report").append(table);
    if (row) row.scrollIntoView({ block: "center" });
  } catch (error) {
    // A table found tampered is set aside (its log answers 409 once a process has read it):
    // the report's first bad event is shown alone, highlighted all the same.
    const only = dataTable([
      ["admin.audits.version", (e) => e.version], ["admin.audits.type", (e) => e.event_type], ["admin.audits.words", (e) => e.problem],
    ], [bad], t("admin.audits.log", { table: result.table_id }));
    markBad(only.querySelector("tbody tr"), bad);
    $("audit-report").append(element("p", t("admin.audits.log_unreadable", { why: error.message }), { class: "hint" }), only);
  }
}

function markBad(row, bad) {
  row.classList.add("bad");
  row.setAttribute("aria-label", t("admin.audits.bad_row", { version: bad.version }));
  row.id = "first-bad-event";
}

// --- collusion reports ---------------------------------------------------------------------

export async function startReport() {
  const body = { min_hands: Number($("report-min").value) };
  if ($("report-from").value) body.from = dayStart($("report-from").value);
  if ($("report-to").value) body.to = dayAfter($("report-to").value);
  const started = await api("POST", "/v1/reports/collusion", body);
  $("report-id").value = started.report_id;
  await readReport();
}

export async function readReport() {
  const id = $("report-id").value.trim();
  const show = (record) => $("report-view").replaceChildren(element("p", t("admin.reports.status", { id: record.report_id, status: t(`admin.job.${record.status}`) })));
  const record = await untilDone(`/v1/reports/${encodeURIComponent(id)}`, show);
  if (record.status !== "finished" || !record.result) return;
  const result = record.result;
  $("report-view").append(
    element("p", t("admin.reports.summary", { hands: result.hands, players: result.players, pairs: result.pairs_scored })),
    dataTable([
      ["admin.reports.pair", (p) => p.players.join(" + ")], ["admin.reports.score", (p) => p.score.toFixed(2)],
      ["admin.reports.hands_together", (p) => p.hands_together], ["admin.reports.both_in", (p) => p.both_in],
      ["admin.reports.net", (p) => p.net],
    ], result.pairs));
}

// --- quarantine ----------------------------------------------------------------------------

export async function loadQuarantine() {
  const response = await fetch("/readyz", { cache: "no-store", headers: { Accept: "application/json" } });
  const health = await response.json();
  $("quarantine-list").replaceChildren(dataTable([
    ["admin.quarantine.table", (q) => q.table_id], ["admin.quarantine.what", (q) => q.what],
    ["admin.quarantine.reason", (q) => q.reason], ["admin.quarantine.at", (q) => new Date(q.at * 1000).toISOString()],
  ], health.quarantined || []));
}
