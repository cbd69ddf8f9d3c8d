// Cards drawn as cards (face up, or a back for a card this viewer may not see), hand names in
// words from what the rules named (a hand history's `hand_names`: category and ranks), and the
// countdown ring. No game logic here: the server says what a hand is.

import { element } from "/play/api.js";
import { t } from "/play/i18n.js";

const SIGNS = { s: "\u2660", h: "\u2665", d: "\u2666", c: "\u2663" };

/** The rank in words: `one` ("seven") or `many` ("sevens"). */
export const rankWord = (rank, count = "one") => t(`common.rank.${rank}.${count}`);

/** A card: `As` shows "A♠" and is read "ace of spades". */
export function cardElement(card) {
  const node = element("span", undefined, { class: `card suit-${card[1]}`, role: "img" });
  node.append(element("span", card[0] === "T" ? "10" : card[0], { class: "rank" }),
    element("span", SIGNS[card[1]], { class: "suit" }));
  node.setAttribute("aria-label", t("common.card.name", { rank: rankWord(card[0]), suit: t(`common.suit.${card[1]}`) }));
  node.dataset.card = card;
  return node;
}

/** A card face down. */
export function cardBack() {
  return element("span", undefined, { class: "card back", role: "img", "aria-label": t("common.card.face_down") });
}

/** Cards face up, or `count` backs when `cards` is null. */
export function cardsElement(cards, count = 0) {
  const node = element("span", undefined, { class: "cards" });
  if (cards) node.append(...cards.map(cardElement));
  else for (let i = 0; i < count; i += 1) node.append(cardBack());
  return node;
}

/** A hand's name in words, from the rules' `{category, ranks}`. */
export function handWords(name) {
  if (!name) return "";
  const [first, second] = name.ranks;
  return t(`common.hand.${name.category}`, {
    one: rankWord(first),
    many: rankWord(first, "many"),
    one2: second ? rankWord(second) : "",
    many2: second ? rankWord(second, "many") : "",
  });
}

const RING = 2 * Math.PI * 18; // the ring's circumference (r = 18 in a 40 x 40 box)

/** The countdown ring: an SVG circle whose stroke is the time left, and the seconds in it. */
export function countdownRing() {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 40 40");
  svg.setAttribute("class", "ring");
  svg.setAttribute("aria-hidden", "true");
  for (const cls of ["ring-track", "ring-left"]) {
    const circle = document.createElementNS(ns, "circle");
    for (const [name, value] of [["cx", 20], ["cy", 20], ["r", 18], ["class", cls]]) circle.setAttribute(name, value);
    svg.append(circle);
  }
  svg.lastChild.style.strokeDasharray = String(RING);
  return svg;
}

/** Set the ring to `fraction` (0..1) of the time left. */
export function setRing(svg, fraction) {
  const left = svg.querySelector(".ring-left");
  left.style.strokeDashoffset = String(RING * (1 - Math.max(0, Math.min(1, fraction))));
  svg.classList.toggle("urgent", fraction < 0.25);
}
