// Player protection at a player's seat (API.md, "Player protection"): the session line (time
// played in this session and its net result in chips), the away/back switch, and a reality
// check as a modal dialog the player must answer ("continue" or "stop") before playing on.
//
// What it shows comes from the seat's own part of the table view (`seats[].session`: since
// when, the net result, whether a reality check waits; only this seat, operators and auditors
// see it) and from the seat's events on the feed (`reality_check` carries the minutes played
// and the net result the check was made with).

import { $, ApiError, api, serverNow, tablePath } from "/play/api.js";
import { t } from "/play/i18n.js";
import { netWords } from "/play/words.js";

const mine = {
  table: null,
  seat: null,
  session: null, // the seat's `session` in the last view (null: no session shown)
  away: false,
  check: null, // what the open reality check says: {minutes, net}; null while none waits
  seen: false, // a view of the seat has been rendered since the table was opened
};

const dialog = () => $("reality-check");
const minutesSince = (since) => Math.max(0, Math.floor((serverNow() - Date.parse(since)) / 60000));

/** Follow the seat `seat` of `table` (a player's tab). */
export function protectSeat(table, seat) {
  Object.assign(mine, { table, seat, session: null, away: false, check: null, seen: false });
  if (dialog().open) dialog().close();
}

/** The seat as the table view has it (`null`: not seated). The first view after the table
 * is opened shows a reality check that waits for an answer (one the feed delivered before
 * this page was open). */
export function renderProtection(seat) {
  $("protection").hidden = !seat;
  if (!seat) return;
  mine.session = seat.session || null;
  mine.away = Boolean(seat.away);
  const first = !mine.seen;
  mine.seen = true;
  if (first && mine.session && mine.session.reality_check_pending) {
    openCheck({ minutes: minutesSince(mine.session.since), net: mine.session.net_result });
  }
  const toggle = $("away-switch");
  toggle.setAttribute("aria-checked", String(mine.away));
  $("away-state").textContent = t(mine.away ? "play.away.on" : "play.away.off");
  tickSession();
}

/** The session line, by the server's clock (called every tick). */
export function tickSession() {
  const line = $("session-line");
  const session = mine.session;
  if (!session || !session.since) {
    line.textContent = "";
    return;
  }
  line.textContent = t("play.session.line", { minutes: minutesSince(session.since), net: netWords(session.net_result) });
}

/** An event of the feed: this seat's reality check opens the dialog; its answer (here, in
 * another tab, or by the operator) or the session's end closes it. */
export function protectionEvent(event) {
  const d = event.data || {};
  if (mine.seat === null || d.seat !== mine.seat) return;
  if (event.type === "reality_check") openCheck({ minutes: d.minutes_played, net: d.net_result });
  if (event.type === "reality_check_answered" || event.type === "session_ended") closeCheck();
}

/** Say the dialog's words again (after a language switch). */
export function rewordCheck() {
  if (!mine.check) return;
  $("check-played").textContent = t("play.check.played", { minutes: mine.check.minutes, net: netWords(mine.check.net) });
}

function openCheck(check) {
  mine.check = check;
  rewordCheck();
  $("check-error").textContent = "";
  if (!dialog().open) dialog().showModal(); // focus moves to its first button
}

function closeCheck() {
  mine.check = null;
  if (dialog().open) dialog().close();
}

async function answer(carryOn) {
  const path = tablePath(mine.table, `/players/${mine.seat}/reality-check`);
  try {
    await api("POST", path, { continue: carryOn });
    closeCheck();
  } catch (error) {
    // 409: no check waits any more (answered elsewhere): nothing left to answer.
    if (error instanceof ApiError && error.status === 409) closeCheck();
    else $("check-error").textContent = t("play.check.failed", { why: error.message });
  }
}

/** Wire the switch and the dialog; `post(what, path, body)` makes a seat's action. */
export function wireProtection(post) {
  $("away-switch").addEventListener("click", (event) => {
    const [what, path] = mine.away ? ["play.away.coming", "back"] : ["play.away.going", "away"];
    return post(t(what), `/players/${mine.seat}/${path}`, {})(event);
  });
  $("check-continue").addEventListener("click", () => answer(true));
  $("check-stop").addEventListener("click", () => answer(false));
  // Not dismissed without an answer: Escape is refused, and a dialog closed any other way
  // while the check still waits opens again.
  dialog().addEventListener("cancel", (event) => event.preventDefault());
  dialog().addEventListener("close", () => {
    if (mine.check) dialog().showModal();
  });
}
