// A table's live feed (`GET /v1/tables/{id}/stream`), kept open: EventSource cannot send
// headers, so each connection uses a short-lived stream ticket (`POST .../stream-tickets`),
// fetched again for every reconnect, resuming after the last version seen (`after`). While it
// is down the page says so ("reconnecting"), and it comes back by itself with a backoff.

import { api, tablePath } from "/play/api.js";

// The event types of the log (the stream's `event:` field): EventSource calls a listener per
// type, so the feed names them all (tests/api/test_play_page.py checks this list against the
// rules' EVENT_TYPES: a type left out here would never reach the page).
export const EVENT_TYPES = [
  "table_created", "player_seated", "chips_added", "player_sat_out", "player_sat_in",
  "player_left", "client_seed_set", "hand_dealt", "decision_made", "declarations_revealed",
  "card_passed", "cards_passed", "community_card_dealt", "cards_drawn", "bet_made",
  "hand_resolved", "players_out_of_game", "hand_voided", "table_ended",
  // player protection (a player's own reality checks and session's end reach that seat only)
  "protection_set", "reality_check", "reality_check_answered", "player_away", "player_back",
  "session_ended",
];

/** Follow `table` after version `after`: `onEvent(version, event)` for each event in order,
 * `onState("live" | "reconnecting" | "closed", seconds)` as the connection changes. Returns
 * a function that stops following. */
export function follow(table, after, onEvent, onState) {
  let last = after;
  let retry = 0;
  let source = null;
  let timer = null;
  let stopped = false;

  const later = () => {
    if (stopped) return;
    const delay = Math.min(10000, 500 * 2 ** retry++);
    onState("reconnecting", Math.round(delay / 100) / 10);
    timer = setTimeout(connect, delay);
  };

  const received = (message) => {
    const version = Number(message.lastEventId);
    if (version <= last) return; // already seen (never expected: the server resumes exactly)
    last = version;
    retry = 0;
    onEvent(version, JSON.parse(message.data));
  };

  async function connect() {
    if (stopped) return;
    let ticket;
    try {
      ticket = (await api("POST", tablePath(table, "/stream-tickets"))).ticket;
    } catch (error) {
      if (error.status === 403 || error.status === 404) return onState("closed", 0);
      return later();
    }
    if (stopped) return;
    // The ticket (valid under a minute, this table only) is the one credential in a URL.
    const query = new URLSearchParams({ ticket, after: String(last) });
    const opened = new EventSource(`${tablePath(table, "/stream")}?${query}`);
    source = opened;
    opened.onopen = () => onState("live", 0);
    for (const type of EVENT_TYPES) opened.addEventListener(type, received);
    opened.onerror = () => {
      // The browser would retry with the same ticket, which expires: close, come back anew.
      opened.close();
      if (source === opened) later();
    };
  }

  connect();
  return () => {
    stopped = true;
    clearTimeout(timer);
    if (source) source.close();
    source = null;
  };
}
