// The table drawn as a card table: seats around the felt with names, stacks and status, each
// dealt-in seat's cards (face up for this viewer's own and for hands shown at the showdown,
// face down otherwise), the pots in the middle; and the controls for what this seat may do now
// (the phases and options the table view gives: pass, declare, draw, bet).

import { element, button } from "/play/api.js";
import { cardsElement, handWords } from "/play/cards.js";
import { t } from "/play/i18n.js";
import { nameOf } from "/play/words.js";

/** The pots that exist at this table (low pot, reserve and side pot only where they do). */
function potsElement(view) {
  const pots = element("div", undefined, { class: "pots" });
  const pot = (key, chips) => {
    const node = element("p", undefined, { class: "pot" });
    node.append(element("span", t(key), { class: "pot-name" }), " ", element("strong", String(chips)));
    return node;
  };
  pots.append(pot("play.pot", view.pot));
  if (view.rules.hi_lo) pots.append(pot("play.low_pot", view.low_pot));
  if (view.reserve || view.rules.cap_mode === "reserve") pots.append(pot("play.reserve", view.reserve));
  if (view.side_pot || view.rules.wimp_into === "side_pot") pots.append(pot("play.side_pot", view.side_pot));
  const hand = view.hand;
  if (hand && hand.community) {
    const community = element("p", undefined, { class: "community" });
    community.append(element("span", t("play.community"), { class: "pot-name" }), " ", cardsElement(hand.community));
    pots.append(community);
  }
  return pots;
}

/** A seat's status in words: "away" (dealt out until back, as everyone may see), else its
 * status at the table. */
export const standing = (seat) => (seat.away ? t("common.status.away") : t(`common.status.${seat.status}`));

/** What a seat is doing in the hand, in words. */
function seatState(view, seat) {
  const hand = view.hand;
  if (!hand || !hand.order.includes(seat)) return "";
  const decided = hand.decisions && hand.decisions[String(seat)];
  if (decided) return t(`common.value.${decided}`);
  if (hand.betting && (hand.betting.folded || []).includes(seat)) return t("play.state.folded");
  if (hand.declared.includes(seat)) return t("play.state.decided");
  return t("play.state.deciding");
}

/** Whose turn it is, if the phase has turns. */
function turnOf(hand) {
  if (!hand) return null;
  if (hand.phase === "drawing") return hand.drawing_turn;
  if (hand.phase === "betting" && hand.betting) return hand.betting.turn;
  if (hand.phase === "declaring" && hand.on_turn !== undefined) return hand.on_turn;
  return null;
}

/** The table: seats around the felt (`shown`: the last showdown's cards and names by seat). */
export function tableElement(view, mySeat, shown) {
  const felt = element("div", undefined, { class: "felt" });
  felt.append(potsElement(view));
  const seats = element("ol", undefined, { class: "seats", "aria-label": t("play.seats") });
  const hand = view.hand;
  const turn = turnOf(hand);
  view.seats.forEach((s, index) => {
    const node = element("li", undefined, { class: "seat", "data-seat": String(s.seat) });
    // Around an ellipse, the first seat at the bottom (CSSOM, allowed under the page's CSP).
    node.style.setProperty("--angle", `${90 + (360 * index) / view.seats.length}deg`);
    if (s.seat === mySeat) node.classList.add("mine");
    if (s.seat === turn) node.classList.add("turn");
    const head = element("p", undefined, { class: "seat-name" });
    head.append(element("strong", s.player_id));
    if (s.seat === view.button) head.append(" ", element("span", t("play.button_mark"), { class: "dealer", title: t("play.button") }));
    node.append(head, element("p", t("play.stack", { chips: s.stack }), { class: "stack" }));
    const status = [standing(s), seatState(view, s.seat)].filter(Boolean).join(" · ");
    node.append(element("p", status, { class: "seat-status" }));
    const show = shown && shown.cards[String(s.seat)];
    if (show) {
      node.append(cardsElement(show));
      const named = shown.names[String(s.seat)];
      if (named) node.append(element("p", handWords(named.high), { class: "hand-name" }));
    } else if (hand && hand.order.includes(s.seat)) {
      node.append(s.seat === mySeat && hand.cards ? cardsElement(hand.cards) : cardsElement(null, view.rules.cards));
    }
    seats.append(node);
  });
  felt.append(seats);
  return felt;
}

/** The controls for what `seat` may do now, or a line saying what the table waits for. */
export function actions(view, seat, post) {
  const hand = view.hand;
  const rules = view.rules;
  if (!hand || !hand.order.includes(seat)) return [element("p", t(hand ? "play.wait.not_dealt_in" : "play.wait.no_hand"))];
  if (hand.phase === "passing" && rules.pass_the_trash && !(hand.passed || []).includes(seat)) {
    return (hand.cards || []).map((card) =>
      button(t("play.act.pass", { card }), post(t("play.act.pass", { card }), "/pass", { card })));
  }
  if (hand.phase === "declaring" && !hand.declared.includes(seat)) {
    if (rules.declare === "sequential" && hand.on_turn !== seat) {
      return [element("p", t("play.wait.declare_turn", { name: nameOf(hand.on_turn) }))];
    }
    const choices = rules.hi_lo ? ["high", "low", "both", "out"] : ["in", "out"];
    return choices.map((decision) =>
      button(t(`play.act.${decision}`), post(t(`play.act.${decision}`), "/declare", { decision })));
  }
  if (hand.phase === "drawing" && hand.drawing_turn === seat) return [drawForm(hand.cards || [], rules.draw, post)];
  if (hand.phase === "betting" && hand.betting && hand.betting.turn === seat) {
    const betting = hand.betting;
    const raise = betting.raises < betting.max_raises ? "raise" : null;
    const choices = (betting.to_call > 0 ? ["call", raise, "fold"] : ["check", "bet", "fold"]).filter(Boolean);
    return choices.map((action) => {
      const label = t(`play.act.${action}`, { chips: action === "call" ? betting.to_call : betting.bet_size });
      return button(label, post(label, "/bet", { action }));
    });
  }
  const turn = turnOf(hand);
  const key = `play.wait.${hand.phase}`;
  return [element("p", t(key, { name: turn === null || turn === undefined ? "" : nameOf(turn) }))];
}

/** Tick a box per card to discard (none: stand pat), then draw. */
function drawForm(cards, most, post) {
  const form = element("form", undefined, { "aria-label": t("play.draw.label", { count: most }) });
  const fieldset = element("fieldset");
  fieldset.append(element("legend", t("play.draw.legend", { count: most })));
  cards.forEach((card, i) => {
    const box = element("input", undefined, { type: "checkbox", id: `discard-${i}`, value: card });
    const label = element("label", undefined, { for: `discard-${i}` });
    label.append(cardsElement([card]));
    fieldset.append(box, label);
  });
  fieldset.append(element("button", t("play.act.draw"), { type: "submit" }));
  form.append(fieldset);
  form.addEventListener("submit", (event) => {
    const discard = [...form.querySelectorAll("input:checked")].map((box) => box.value);
    const what = discard.length ? t("play.act.draw_n", { count: discard.length }) : t("play.act.stand_pat");
    return post(what, "/draw", { discard })(event);
  });
  return form;
}
