// The fairness verifier of the reference client: docs/fairness.md, sections 1 to 5, in the
// browser with WebCrypto (SHA-256 and HMAC-SHA256) and nothing else. It mirrors the Python
// verifier (service/fairness/deck.py and checks.py): the same steps, the same checks, the
// same verdicts ("verified", "failed", "not_verifiable", "invalid").
//
// It writes no words of its own: a check's name and detail are messages, {key, values}, keys of
// the string tables (web/strings/<lang>.json, `common.verify.check.*` and
// `common.verify.detail.*`) whose English is the Python verifier's wording; a value may be a
// message itself, or a list of them (see i18n.js `say`). The keys are written out here, so
// tests/test_strings.py finds every one.
//
// What it checks of one hand history (GET /v1/tables/{table_id}/hands/{hand}):
//   - the seed against its commitment (the SHA-256 published before the deal);
//   - the deck context rebuilt from the table id, hand number and client seeds (v1 or v2);
//   - the deck re-made from the seed (HMAC-SHA256 stream, Fisher-Yates with rejection) and
//     re-dealt in the hand's order: every dealt hand, the kitty and the undealt rest the
//     history shows must match, and every hand turned face up at the showdown;
//   - community cards (they come off the top of the undealt rest).
// What it leaves to `guts verify`: following cards through passes and draws (the hands
// shown after them are reported as not compared here), and the settlement's chips.

const RANKS = "23456789TJQKA";
const SUITS = "shdc";
/** The canonical starting order of the shuffle: 2s 2h 2d 2c 3s ... Ad Ac. */
export const FULL_DECK = Object.freeze(
  [...RANKS].flatMap((rank) => [...SUITS].map((suit) => rank + suit)),
);
const TWO_32 = 2 ** 32;
const utf8 = new TextEncoder();

/** `<length>:<text>,` with the length in UTF-8 bytes (the v2 context's fields). */
function netstring(text) {
  return `${utf8.encode(text).length}:${text},`;
}

/**
 * The deck context of one hand, as UTF-8 bytes. Without players' seeds (v1):
 * `guts-v1|<table_id>|<hand>|<client_seed>`; with them (v2, `clientSeeds` maps seat numbers
 * to seeds): `guts-v2|` and netstrings of the table id, the hand, the operator's client seed,
 * then each seat's number and seed by ascending seat. The one place that knows the formats.
 */
export function deckContext(tableId, hand, clientSeed = "", clientSeeds = {}) {
  const seats = Object.keys(clientSeeds || {}).sort((a, b) => Number(a) - Number(b));
  if (seats.length === 0) {
    return utf8.encode(`guts-v1|${tableId}|${hand}|${clientSeed}`);
  }
  let text = "guts-v2|" + netstring(tableId) + netstring(String(hand)) + netstring(clientSeed);
  for (const seat of seats) text += netstring(String(Number(seat))) + netstring(clientSeeds[seat]);
  return utf8.encode(text);
}

export function hexToBytes(hex) {
  if (typeof hex !== "string" || hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
    throw new Error(`not hex: ${JSON.stringify(hex)}`);
  }
  return Uint8Array.from(hex.match(/../g) || [], (pair) => parseInt(pair, 16));
}

export function bytesToHex(bytes) {
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export async function sha256Hex(bytes) {
  return bytesToHex(await crypto.subtle.digest("SHA-256", bytes));
}

/**
 * The 52 cards in the order `seed` and `context` fix (index 0 is dealt first).
 * Block n = HMAC-SHA256(seed, context | "|" | n as 8 bytes big-endian), read as big-endian
 * 32-bit words; Fisher-Yates from index 51 down to 1, rejecting words >= 2**32 - 2**32 % m.
 */
export async function deriveDeck(seed, context) {
  const key = await crypto.subtle.importKey(
    "raw", seed, { name: "HMAC", hash: "SHA-256" }, false, ["sign"],
  );
  const message = new Uint8Array(context.length + 9);
  message.set(context);
  message[context.length] = 0x7c; // "|"
  let words = [];
  let counter = 0;
  async function nextWord() {
    if (words.length === 0) {
      // The counter as an unsigned 64-bit big-endian integer (a deck needs about 7 blocks).
      new DataView(message.buffer).setBigUint64(context.length + 1, BigInt(counter++));
      const block = new DataView(await crypto.subtle.sign("HMAC", key, message));
      for (let offset = 0; offset < 32; offset += 4) words.push(block.getUint32(offset));
    }
    return words.shift();
  }
  const deck = [...FULL_DECK];
  for (let i = deck.length - 1; i > 0; i--) {
    const m = i + 1;
    const limit = TWO_32 - (TWO_32 % m);
    let word = await nextWord();
    while (word >= limit) word = await nextWord(); // rejected words are consumed too
    const j = word % m;
    [deck[i], deck[j]] = [deck[j], deck[i]];
  }
  return deck;
}

/** Deal `cards` cards one at a time: each round one to every seat of `order`, then the kitty. */
export function dealCards(deck, order, cards, kitty) {
  const positions = order.map(String).concat(kitty ? ["kitty"] : []);
  const hands = Object.fromEntries(positions.map((p) => [p, []]));
  let top = 0;
  for (let round = 0; round < cards; round++) {
    for (const p of positions) hands[p].push(deck[top++]);
  }
  return { hands, rest: deck.slice(top) };
}

/** A message of the string tables: `key` with `{name}` placeholders filled from `values`. */
const msg = (key, values = {}) => ({ key, values });
const describe = (cards) => (cards.length ? cards.join(" ") : msg("common.verify.detail.no_cards"));
const json = (value) => JSON.stringify(value);
const sameSet = (a, b) => a.length === b.length && [...a].sort().join() === [...b].sort().join();
const isCardList = (v) => Array.isArray(v) && v.every((c) => FULL_DECK.includes(c));

/** Every set of cards the history shows: dealt hands (in deal order), shown hands (as sets). */
function sightings(history) {
  const found = [];
  for (const [seat, cards] of Object.entries(history.cards || {})) {
    found.push({ name: msg("common.verify.check.seat_cards", { seat }), position: seat, cards, ordered: true });
  }
  if (history.kitty && history.kitty.length) {
    found.push({ name: msg("common.verify.check.kitty"), position: "kitty", cards: history.kitty, ordered: true });
  }
  const outcome = history.outcome || {};
  for (const [seat, cards] of Object.entries(outcome.shown || {})) {
    found.push({ name: msg("common.verify.check.seat_shown", { seat }), position: seat, cards, ordered: false });
  }
  if (outcome.kitty_shown && outcome.kitty_shown.length) {
    found.push({ name: msg("common.verify.check.kitty_shown"), position: "kitty", cards: outcome.kitty_shown, ordered: false });
  }
  for (const event of history.events || []) {
    const data = event.data || {};
    const label = (check) => msg("common.verify.check.event", { version: event.version, type: event.type, check });
    if (event.type === "hand_dealt") {
      for (const [seat, cards] of Object.entries(data.cards || {})) {
        found.push({ name: label(msg("common.verify.check.seat_cards", { seat })), position: seat, cards, ordered: true });
      }
      if (data.kitty && data.kitty.length) {
        found.push({ name: label(msg("common.verify.check.kitty")), position: "kitty", cards: data.kitty, ordered: true });
      }
      if (Array.isArray(data.deck)) {
        found.push({ name: label(msg("common.verify.check.rest")), position: "rest", cards: data.deck, ordered: true });
      }
    } else if (event.type === "hand_resolved") {
      for (const [seat, cards] of Object.entries(data.shown || {})) {
        found.push({ name: label(msg("common.verify.check.seat_shown", { seat })), position: seat, cards, ordered: false });
      }
      if (data.kitty_shown && data.kitty_shown.length) {
        found.push({ name: label(msg("common.verify.check.kitty_shown")), position: "kitty", cards: data.kitty_shown, ordered: false });
      }
    }
  }
  return found;
}

/** Whether a kitty was dealt, when the history says so; null when it cannot tell. */
function kittyDealt(history, found) {
  if (Array.isArray(history.kitty)) return history.kitty.length > 0;
  for (const event of history.events || []) {
    const kitty = (event.data || {}).kitty;
    if (event.type === "hand_dealt" && Array.isArray(kitty)) return kitty.length > 0;
  }
  return found.some((s) => s.position === "kitty") ? true : null;
}

/** What makes `history` unusable as a hand history (empty when it is usable). */
function formatProblems(history, found) {
  const problems = [];
  if (typeof history.table_id !== "string") problems.push(msg("common.verify.detail.not_string", { field: "table_id" }));
  if (!Number.isInteger(history.hand) || history.hand < 1) problems.push(msg("common.verify.detail.bad_hand"));
  const order = history.order;
  if (!Array.isArray(order) || !order.length || !order.every(Number.isInteger)) {
    problems.push(msg("common.verify.detail.bad_order"));
  } else if (new Set(order).size !== order.length) {
    problems.push(msg("common.verify.detail.order_repeats"));
  }
  if (typeof history.commitment !== "string" || !/^[0-9a-fA-F]{64}$/.test(history.commitment)) {
    problems.push(msg("common.verify.detail.bad_commitment"));
  }
  for (const key of ["stacked", "reshuffled"]) {
    if (typeof history[key] !== "boolean") problems.push(msg("common.verify.detail.not_boolean", { field: key }));
  }
  for (const key of ["client_seed", "deck_context"]) {
    if (key in history && typeof history[key] !== "string") problems.push(msg("common.verify.detail.not_string", { field: key }));
  }
  const seeds = history.client_seeds ?? {};
  if (typeof seeds !== "object" || Array.isArray(seeds) || seeds === null ||
      !Object.entries(seeds).every(([s, v]) => /^[0-9]+$/.test(s) && typeof v === "string")) {
    problems.push(msg("common.verify.detail.bad_client_seeds"));
  }
  if ("seed" in history && history.seed !== null && typeof history.seed !== "string") {
    problems.push(msg("common.verify.detail.not_string", { field: "seed" }));
  }
  for (const s of found) if (!isCardList(s.cards)) problems.push(msg("common.verify.detail.not_cards", { what: s.name }));
  return problems;
}

const FORMAT = msg("common.verify.check.format");

/** Collects checks; "not verifiable" findings are kept apart from failures. */
class CheckList {
  constructor() {
    this.items = [];
    this.failures = false;
    this.unverifiable = false;
    this.partial = false;
  }
  /** A check: its name and detail are messages (`msg`). */
  add(name, passed, detail) {
    this.items.push({ name, passed, detail });
    this.failures ||= !passed;
  }
  cannotVerify(name, detail) {
    this.items.push({ name, passed: false, detail: msg("common.verify.detail.not_verifiable", { why: detail }) });
    this.unverifiable = true;
  }
  report(handId) {
    const status = this.failures ? "failed" : this.unverifiable ? "not_verifiable" : "verified";
    return { ok: status === "verified", status, handId, checks: this.items, partial: this.partial };
  }
}

/**
 * Check one hand history. Never throws for bad input: a non-history gives status "invalid".
 * Returns {ok, status, handId, checks: [{name, passed, detail}], partial}, `name` and `detail`
 * messages ({key, values}: i18n.js `say` words them); `partial` says that cards moved after the
 * deal (passes, draws) and the hands shown at the end were not compared.
 */
export async function verifyHistory(history) {
  const checks = new CheckList();
  const invalid = (detail, handId = null) => {
    checks.add(FORMAT, false, detail);
    return { ok: false, status: "invalid", handId, checks: checks.items, partial: false };
  };
  if (typeof history !== "object" || history === null || Array.isArray(history)) {
    return invalid(msg("common.verify.detail.not_object"));
  }
  try {
    return await verify(history, checks);
  } catch (error) {
    return invalid(msg("common.verify.detail.malformed", { why: error.message }));
  }
}

const DECK_CONTEXT = msg("common.verify.check.deck_context");
const SEED = msg("common.verify.check.seed");

async function verify(history, checks) {
  const found = sightings(history);
  const problems = formatProblems(history, found);
  const handId = typeof history.hand_id === "string" ? history.hand_id : null;
  if (problems.length) {
    checks.add(FORMAT, false, problems);
    return { ok: false, status: "invalid", handId, checks: checks.items, partial: false };
  }
  const { table_id: tableId, hand, order } = history;
  checks.add(FORMAT, true, msg("common.verify.detail.format", { hand, table: tableId, players: order.length }));

  // The deck context binds the deck to this table, hand and client seeds.
  const clientSeed = history.client_seed ?? "";
  const clientSeeds = history.client_seeds ?? {};
  const seats = Object.keys(clientSeeds).sort((a, b) => Number(a) - Number(b));
  if (seats.length) {
    const seeds = seats.map((s) => msg("common.verify.detail.seat_seed", { seat: s, seed: json(clientSeeds[s]) }));
    checks.add(msg("common.verify.check.client_seeds"), !clientSeed, clientSeed
      ? msg("common.verify.detail.seeds_then_operator", { seeds, seed: json(clientSeed) })
      : msg("common.verify.detail.seeds", { seeds }));
  }
  const context = deckContext(tableId, hand, clientSeed, clientSeeds);
  const derived = new TextDecoder().decode(context);
  if (history.deck_context === undefined) {
    checks.add(DECK_CONTEXT, true, msg("common.verify.detail.context_derived", { context: json(derived) }));
  } else {
    const same = history.deck_context === derived;
    checks.add(DECK_CONTEXT, same, same ? msg("common.verify.detail.context", { context: json(derived) })
      : msg("common.verify.detail.context_differs", { stated: json(history.deck_context), derived: json(derived) }));
  }

  if (history.seed === undefined || history.seed === null) {
    checks.cannotVerify(SEED, msg("common.verify.detail.no_seed", { status: json(history.status) }));
    return checks.report(handId);
  }
  if (!history.seed || !/^([0-9a-fA-F]{2})+$/.test(history.seed)) {
    checks.add(SEED, false, msg("common.verify.detail.seed_not_hex", { seed: json(history.seed) }));
    return checks.report(handId);
  }
  const seed = hexToBytes(history.seed);
  const digest = await sha256Hex(seed);
  const commitment = history.commitment.toLowerCase();
  checks.add(msg("common.verify.check.commitment"), digest === commitment, digest === commitment
    ? msg("common.verify.detail.commitment", { digest })
    : msg("common.verify.detail.commitment_differs", { digest, commitment }));
  checkEventsAgree(history, checks);

  if (history.stacked) {
    checks.cannotVerify(msg("common.verify.check.stacked"), msg("common.verify.detail.stacked"));
    return checks.report(handId);
  }
  if (!history.reshuffled) {
    checks.cannotVerify(msg("common.verify.check.reshuffled"), msg("common.verify.detail.carried_over"));
    return checks.report(handId);
  }
  const deck = await deriveDeck(seed, context);
  checkDeal(history, order, deck, found, checks);
  return checks.report(handId);
}

/** The deal event recorded in the history states the same deal as the record's fields. */
function checkEventsAgree(history, checks) {
  const keys = ["hand", "order", "commitment", "seed", "client_seed", "client_seeds",
    "deck_context", "stacked", "reshuffled"];
  for (const event of history.events || []) {
    if (event.type !== "hand_dealt") continue;
    const data = event.data || {};
    const differ = keys.filter((k) => k in data && k in history &&
      JSON.stringify(canonical(data[k])) !== JSON.stringify(canonical(history[k])));
    checks.add(msg("common.verify.check.deal_fields", { version: event.version ?? "?" }), !differ.length,
      differ.length ? msg("common.verify.detail.fields_differ", { fields: differ.join(", ") })
        : msg("common.verify.detail.fields_agree"));
  }
}

/** A value with its objects' keys sorted, so that two JSON texts compare as Python's == does. */
function canonical(value) {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical(value[k])]));
  }
  return value;
}

const DEAL = msg("common.verify.check.deal");

/** `cards` as the history has them against what the seed deals. */
function sameCards(name, cards, expected, same) {
  return { name, passed: same, detail: same ? msg("common.verify.detail.cards", { cards: describe(cards) })
    : msg("common.verify.detail.cards_differ", { cards: describe(cards), expected: describe(expected) }) };
}

/** Re-deal `deck` in `order` and compare every sighting with the derived hands. */
function checkDeal(history, order, deck, found, checks) {
  const dealt = found.filter((s) => s.position !== "rest");
  let sizes = new Set(dealt.filter((s) => s.ordered || s.position === "kitty").map((s) => s.cards.length));
  if (!sizes.size) sizes = new Set(dealt.map((s) => s.cards.length));
  if (!sizes.size) {
    checks.add(DEAL, true, msg("common.verify.detail.nothing_dealt"));
    return;
  }
  if (sizes.size > 1) {
    checks.add(DEAL, false, msg("common.verify.detail.sizes_differ", { sizes: [...sizes].sort().join(", ") }));
    return;
  }
  const [cards] = sizes;
  const known = kittyDealt(history, found);
  const candidates = (known === null ? [false, true] : [known])
    .filter((kitty) => (order.length + (kitty ? 1 : 0)) * cards <= 52);
  if (!candidates.length) {
    checks.add(DEAL, false, msg("common.verify.detail.too_many", { players: order.length, cards }));
    return;
  }
  // Cards that changed hands after the deal (pass the trash, draws): the hands shown at the
  // end are then not the hands dealt, and this page does not follow them (guts verify does).
  const moved = Object.keys(history.passes || {}).length > 0 || Object.keys(history.draws || {}).length > 0 ||
    (history.events || []).some((e) => e.type === "cards_passed" || e.type === "cards_drawn");

  function compare(kitty) {
    const { hands, rest } = dealCards(deck, order, cards, kitty);
    const results = [];
    const community = history.community ||
      (history.events || []).filter((e) => e.type === "community_card_dealt").map((e) => e.data.card);
    if (community.length) {
      const expected = rest.slice(0, community.length);
      results.push(sameCards(msg("common.verify.check.community"), community, expected,
        community.join() === expected.join()));
    }
    for (const s of found) {
      if (!s.ordered && moved) continue; // reported once below
      const expected = s.position === "rest" ? rest : hands[s.position];
      if (expected === undefined) {
        results.push({ name: s.name, passed: false,
          detail: msg("common.verify.detail.not_in_order", { seat: s.position, order: json(order) }) });
        continue;
      }
      const same = s.ordered ? s.cards.join() === expected.join() : sameSet(s.cards, expected);
      results.push(sameCards(s.name, s.cards, expected, same));
    }
    return results;
  }

  const outcomes = new Map(candidates.map((kitty) => [kitty, compare(kitty)]));
  // With the kitty unknown (a player's view), keep the layout the cards agree with, if any.
  const score = (kitty) => outcomes.get(kitty).filter((c) => c.passed).length;
  const best = candidates.reduce((a, b) => (score(b) > score(a) ? b : a));
  let kitty = msg(best ? "common.verify.detail.with_kitty" : "common.verify.detail.without_kitty");
  if (known === null) kitty = msg("common.verify.detail.inferred", { note: kitty });
  checks.add(msg("common.verify.check.layout"), true,
    msg("common.verify.detail.layout", { cards, order: json(order), kitty }));
  for (const c of outcomes.get(best)) checks.add(c.name, c.passed, c.detail);
  if (moved && found.some((s) => !s.ordered)) {
    checks.partial = true;
    checks.items.push({ name: msg("common.verify.check.moved"), passed: true,
      detail: msg("common.verify.detail.moved") });
  }
}
