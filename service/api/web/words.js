// The table's events and results in words ("alice is in", "carol passes a card", "bob wins 12
// with a pair of sevens; alice matches 12"), by the players' names, in the page's language.

import { handWords } from "/play/cards.js";
import { language, t } from "/play/i18n.js";

/** Seat -> player id, learnt from the views and the events. */
export const names = new Map();

export const nameOf = (seat) => names.get(Number(seat)) || t("common.seat_n", { seat });

/** Learn who sits where from a table view's seats or a deal's `players`. */
export function learnNames(seats) {
  if (Array.isArray(seats)) for (const s of seats) names.set(s.seat, s.player_id);
  else for (const [seat, player] of Object.entries(seats || {})) names.set(Number(seat), player);
}

/** A decision in words: "alice is in", "bob goes high". */
export const decisionWords = (seat, decision) => t(`play.log.decision.${decision}`, { name: nameOf(seat) });

const SIMPLE = {
  table_created: "play.log.table_created",
  cards_passed: "play.log.cards_passed",
  player_sat_out: "play.log.player_sat_out",
  player_sat_in: "play.log.player_sat_in",
  client_seed_set: "play.log.client_seed_set",
  table_ended: "play.log.table_ended",
};

/** A session's net result in chips, in words: "up 12 chips", "down 1 chip", "even". */
export function netWords(chips) {
  if (chips === 0) return t("play.net.even");
  const count = Math.abs(chips);
  const plural = new Intl.PluralRules(language()).select(count) === "one" ? "one" : "other";
  return t(`play.net.${chips > 0 ? "up" : "down"}.${plural}`, { chips: count });
}

/** A moment (ISO 8601) as the page's language writes a date and time. */
export function momentWords(iso) {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return String(iso);
  return at.toLocaleString(language(), { dateStyle: "medium", timeStyle: "short" });
}

/** A limit in minutes, or "none". */
const minutesOrNone = (key, minutes) => (minutes ? t(key, { minutes }) : t("play.log.no_limit"));

/** Player protection's events (API.md, "Player protection"): limits, reality checks and
 * their answers, away and back, a session's end (and until when the player may not sit). */
function protectionWords(event, name) {
  const d = event.data || {};
  switch (event.type) {
    case "protection_set":
      return t("play.log.protection_set", {
        name,
        check: minutesOrNone("play.log.every_minutes", d.reality_check_minutes),
        limit: minutesOrNone("play.log.minutes", d.session_limit_minutes),
      });
    case "reality_check":
      return t("play.log.reality_check", { name, minutes: d.minutes_played, net: netWords(d.net_result) });
    case "reality_check_answered":
      return t(`play.log.reality_check_answered.${d.answer}`, { name });
    case "player_away":
      return t(`play.log.player_away.${d.reason}`, { name });
    case "player_back":
      return t("play.log.player_back", { name });
    case "session_ended": {
      const ended = t(`play.log.session_ended.${d.reason}`, { name });
      return d.until ? `${ended} ${t("play.log.until", { until: momentWords(d.until) })}` : ended;
    }
    default:
      return null;
  }
}

/** One event of the log in words. */
export function eventWords(event) {
  const d = event.data || {};
  const name = "seat" in d ? nameOf(d.seat) : "";
  if (event.type in SIMPLE) return t(SIMPLE[event.type], { name });
  const protection = protectionWords(event, name);
  if (protection !== null) return protection;
  switch (event.type) {
    case "player_seated":
      names.set(d.seat, d.player_id);
      return t("play.log.player_seated", { name: d.player_id, seat: d.seat, chips: d.buy_in });
    case "chips_added":
      return t("play.log.chips_added", { name, chips: d.amount });
    case "player_left":
      return t("play.log.player_left", { name, chips: d.cash_out });
    case "hand_dealt":
      learnNames(d.players);
      return t("play.log.hand_dealt", { hand: d.hand, count: (d.order || []).length });
    case "decision_made":
      return d.decision ? decisionWords(d.seat, d.decision) : t("play.log.decided", { name });
    case "declarations_revealed":
      return t("play.log.revealed");
    case "card_passed":
      return t("play.log.card_passed", { name });
    case "community_card_dealt":
      return t("play.log.community", { card: d.card });
    case "cards_drawn":
      return t("play.log.draws", { name, count: typeof d.drawn === "number" ? d.drawn : d.drawn.length });
    case "bet_made":
      return t(`play.log.bet.${d.action}`, { name, chips: d.amount });
    case "hand_resolved":
      return resultWords(d, {});
    case "hand_voided":
      return t("play.log.hand_voided", { hand: d.hand });
    case "players_out_of_game":
      return t("play.log.out_of_game", { names: (d.seats || []).map(nameOf).join(", ") });
    default:
      return event.type;
  }
}

/** One pot's result: winners with their hands' names, then who matches. */
function potWords(pot, handNames, which) {
  const parts = [];
  for (const [seat, chips] of Object.entries(pot.won || {})) {
    const named = handNames[seat] && handNames[seat][which];
    parts.push(named
      ? t("play.result.wins_with", { name: nameOf(seat), chips, hand: handWords(named) })
      : t("play.result.wins", { name: nameOf(seat), chips }));
  }
  for (const [seat, chips] of Object.entries(pot.matched || {})) {
    if (chips > 0) parts.push(t("play.result.matches", { name: nameOf(seat), chips }));
  }
  return parts;
}

/** A hand's result in words, from `hand_resolved` and the history's `hand_names` (if known). */
export function resultWords(resolved, handNames) {
  const parts = [];
  if (resolved.outcome === "nobody_in") parts.push(t("play.result.nobody_in"));
  if (resolved.outcome === "kitty_wins") parts.push(t("play.result.kitty_wins"));
  if (resolved.outcome === "all_tied") parts.push(t("play.result.all_tied"));
  parts.push(...potWords(resolved, handNames || {}, "high"));
  if (resolved.low) {
    const low = potWords(resolved.low, handNames || {}, "low");
    if (low.length) parts.push(t("play.result.low_pot", { words: low.join("; ") }));
  }
  for (const [seat, chips] of Object.entries(resolved.wimp || {})) {
    if (chips > 0) parts.push(t("play.result.wimp", { name: nameOf(seat), chips }));
  }
  const sentence = parts.join("; ");
  return t("play.result.hand", { hand: resolved.hand, words: sentence || t("play.result.nothing") });
}

/** The live log in words, newest first, in a list element: a hidden decision ("alice has
 * decided") is filled in when the reveal shows it ("alice is in"). */
export class EventLog {
  constructor(list, keep = 60) {
    this.list = list;
    this.keep = keep;
    this.pending = new Map(); // seat -> the item of its hidden decision in the hand in play
  }

  clear() {
    this.list.replaceChildren();
    this.pending.clear();
  }

  add(version, event) {
    const item = document.createElement("li");
    item.textContent = eventWords(event);
    item.dataset.type = event.type;
    item.dataset.version = String(version);
    if (event.type === "hand_dealt") this.pending.clear();
    if (event.type === "decision_made" && !event.data.decision) this.pending.set(event.data.seat, item);
    if (event.type === "declarations_revealed") {
      for (const [seat, decision] of Object.entries(event.data.decisions || {})) {
        const pending = this.pending.get(Number(seat));
        if (pending) pending.textContent = decisionWords(seat, decision);
      }
      this.pending.clear();
    }
    this.list.prepend(item);
    while (this.list.children.length > this.keep) this.list.lastElementChild.remove();
  }
}
