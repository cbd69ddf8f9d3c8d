// The reference web client of guts (served at /play): how a browser plays at a table through
// the public API alone (openapi.yaml). No framework and no build step; read it top to bottom.
//
// Credentials never go into a URL:
//   - an operator's (or auditor's) key is typed into the page and kept in this tab's
//     sessionStorage; every request sends it as `Authorization: Bearer`;
//   - a player's seat token comes in the link's fragment (#table=...&seat=...&token=...),
//     which a browser never sends to a server; the page reads it and sends it only as a header;
//   - the live feed (EventSource cannot send headers) is opened with a short-lived stream
//     ticket (`POST /v1/tables/{id}/stream-tickets`), fetched again for every reconnect.
//
// The page keeps the table view (`GET /v1/tables/{id}`) as the truth it renders, fetches it
// again when the stream says the table moved, and shows the reveal and the settlement from the
// stream's events as they arrive.

import { verifyHistory } from "/play/fairness.js";

const $ = (id) => document.getElementById(id);
const KEY = "guts.key"; // sessionStorage: the operator's or auditor's key
const LINKS = "guts.links."; // sessionStorage: the seat links this operator handed out, per table

// The event types of the log (GET /events, the stream's `event:` field). EventSource calls a
// listener per type, so the page names them all.
const EVENT_TYPES = [
  "table_created", "player_seated", "chips_added", "player_sat_out", "player_sat_in",
  "player_left", "client_seed_set", "hand_dealt", "decision_made", "declarations_revealed",
  "card_passed", "cards_passed", "community_card_dealt", "cards_drawn", "bet_made",
  "hand_resolved", "players_out_of_game", "hand_voided", "table_ended",
];

const page = {
  table: null, // the table id
  seat: null, // this tab's seat (a player's tab), else null
  token: null, // this tab's seat token (from the fragment), else null
  view: null, // the last table view
  last: 0, // the version of the last event received (resume from it)
  source: null, // the open EventSource
  retry: 0, // reconnects since the last event (for the backoff)
  skew: 0, // server clock minus this clock, in ms (from the Date header)
};

// --- talking to the API --------------------------------------------------------------------

function credential() {
  return page.token || sessionStorage.getItem(KEY);
}

/** One API call: JSON in and out; a refusal throws its problem+json `detail`. */
async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const token = credential();
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  // The server's clock, from its Date header (whole seconds): a countdown by this machine's
  // clock would be wrong by however much it is off; under 1.5 s is taken as no skew at all.
  const skew = Date.parse(response.headers.get("Date")) - Date.now();
  if (!Number.isNaN(skew)) page.skew = Math.abs(skew) < 1500 ? 0 : skew;
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const why = data && (data.detail || data.title);
    throw new Error(`${response.status}: ${why || response.statusText}`);
  }
  return data;
}

const tablePath = (rest = "") => `/v1/tables/${encodeURIComponent(page.table)}${rest}`;

/** Run a user's action; show what went wrong instead of throwing it away. */
function act(what, run) {
  return async (event) => {
    if (event) event.preventDefault();
    try {
      say(`${what}...`);
      await run(event);
      say(`${what}: done.`);
    } catch (error) {
      say(`${what}: ${error.message}`);
    }
  };
}

function say(text) {
  $("status").textContent = text;
}

// --- the live feed -------------------------------------------------------------------------

/** Follow the table's stream from the last version seen, with a fresh ticket each time. */
async function follow() {
  if (page.source) page.source.close();
  page.source = null;
  let ticket;
  try {
    ticket = (await api("POST", tablePath("/stream-tickets"))).ticket;
  } catch (error) {
    feedState(`no live feed (${error.message}); trying again`);
    return reconnectLater();
  }
  // The ticket (valid under a minute, this table only) is the one credential in a URL. A new
  // EventSource cannot send Last-Event-ID, so the resume point goes in `after`.
  const query = new URLSearchParams({ ticket, after: String(page.last) });
  const source = new EventSource(`${tablePath("/stream")}?${query}`);
  page.source = source;
  source.onopen = () => feedState("live");
  for (const type of EVENT_TYPES) source.addEventListener(type, received);
  source.onerror = () => {
    // The browser would reconnect by itself with Last-Event-ID, but with the same ticket,
    // which expires: close and come back with a new ticket, resuming after `page.last`.
    source.close();
    if (page.source === source) reconnectLater();
  };
}

function reconnectLater() {
  const delay = Math.min(10000, 500 * 2 ** page.retry++);
  feedState(`reconnecting in ${Math.round(delay / 100) / 10} s`);
  setTimeout(follow, delay);
}

function feedState(text) {
  $("feed-state").textContent = `Live feed: ${text}.`;
}

/** One event from the stream: `id` is its version, `data` the event as /events gives it. */
function received(message) {
  const version = Number(message.lastEventId);
  if (version <= page.last) return; // already seen (never expected: the server resumes exactly)
  page.last = version;
  page.retry = 0;
  const event = JSON.parse(message.data);
  logEvent(version, event);
  if (event.type === "declarations_revealed") showReveal(event.data);
  if (event.type === "hand_resolved") showOutcome(event.data);
  if (event.type === "hand_dealt") $("outcome").textContent = "";
  refreshSoon();
}

let refreshing = null;
/** Fetch the table view again once the events that arrived together have been read. */
function refreshSoon() {
  clearTimeout(refreshing);
  refreshing = setTimeout(() => refresh().catch((e) => say(e.message)), 50);
}

// --- rendering -----------------------------------------------------------------------------

const SUIT_NAMES = { s: "spades", h: "hearts", d: "diamonds", c: "clubs" };
const SUIT_SIGNS = { s: "\u2660", h: "\u2665", d: "\u2666", c: "\u2663" };
const RANK_NAMES = { T: "10", J: "jack", Q: "queen", K: "king", A: "ace" };

/** A card as text a person reads (and a screen reader says): `As` is "A♠", "ace of spades". */
function cardElement(card) {
  const element = document.createElement("span");
  element.className = `card suit-${card[1]}`;
  element.textContent = `${card[0] === "T" ? "10" : card[0]}${SUIT_SIGNS[card[1]]}`;
  element.setAttribute("aria-label", `${RANK_NAMES[card[0]] || card[0]} of ${SUIT_NAMES[card[1]]}`);
  element.dataset.card = card;
  return element;
}

function cardsElement(cards) {
  const span = document.createElement("span");
  span.className = "cards";
  for (const card of cards) span.append(cardElement(card), " ");
  return span;
}

function element(tag, text, attributes = {}) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

function button(label, onClick, attributes = {}) {
  const node = element("button", label, { type: "button", ...attributes });
  node.addEventListener("click", onClick);
  return node;
}

async function refresh() {
  const view = await api("GET", tablePath());
  page.view = view;
  render(view);
}

function render(view) {
  $("table").hidden = false;
  $("table-id").textContent = view.table_id;
  $("table-summary").textContent =
    `${view.rules.preset}, ante ${view.rules.ante}, ${view.rules.cards} cards; ` +
    `pot ${view.pot}` + (view.rules.hi_lo ? `, low pot ${view.low_pot}` : "") +
    (view.reserve ? `, reserve ${view.reserve}` : "") + (view.side_pot ? `, side pot ${view.side_pot}` : "") +
    `; version ${view.version}`;
  const hand = view.hand;
  const rows = view.seats.map((s) => {
    const row = element("tr");
    let state = "";
    if (hand && hand.order.includes(s.seat)) {
      const decided = hand.decisions && hand.decisions[String(s.seat)];
      state = decided || (hand.declared.includes(s.seat) ? "declared" : "dealt in");
    }
    row.append(element("td", String(s.seat)), element("td", s.player_id),
      element("td", String(s.stack)), element("td", s.status), element("td", state));
    if (s.seat === page.seat) row.className = "mine";
    return row;
  });
  $("seats").replaceChildren(...rows);
  $("hand-summary").textContent = hand
    ? `Hand ${hand.number}: ${hand.phase}` + (hand.community ? `; community card ${hand.community.join(" ")}` : "")
    : "No hand in play.";
  if (page.seat !== null) renderSeat(view);
  tick();
  // The history form offers the last finished hand, unless the user chose another.
  if (hand && hand.number > 1) offerHand(hand.number - 1);
}

function offerHand(number) {
  if (!$("hand-number").dataset.touched) $("hand-number").value = String(number);
}

/** A player's own seat: cards, countdown and the actions the table's rules offer now. */
function renderSeat(view) {
  const hand = view.hand;
  const mine = view.seats.find((s) => s.seat === page.seat);
  $("you").textContent = mine ? `Seat ${mine.seat}, ${mine.player_id}: ${mine.stack} chips (${mine.status}).` : `Seat ${page.seat}.`;
  const inHand = hand && hand.order.includes(page.seat);
  if (!inHand) {
    $("cards").replaceChildren(document.createTextNode(hand ? "not dealt in" : "no hand in play"));
  } else if (hand.cards) {
    $("cards").replaceChildren(cardsElement(hand.cards));
  } else {
    $("cards").replaceChildren(document.createTextNode("face down (no peek: shown after the reveal)"));
  }
  const controls = inHand ? actions(view) : [];
  const focused = document.activeElement && $("act").contains(document.activeElement);
  $("act").replaceChildren(...controls);
  // Keep the keyboard where it was: on the first of the new controls, if it was on the old.
  if (focused && controls.length) (controls[0].querySelector("button, input") || controls[0]).focus();
}

/** The controls for what this seat may do now, or a line saying what the table waits for. */
function actions(view) {
  const hand = view.hand;
  const rules = view.rules;
  const seat = page.seat;
  const post = (what, path, body) => act(what, () => api("POST", tablePath(path), body));
  if (hand.phase === "passing" && rules.pass_the_trash && !(hand.passed || []).includes(seat)) {
    return (hand.cards || []).map((card) =>
      button(`Pass ${card}`, post(`Pass ${card}`, "/pass", { card })));
  }
  if (hand.phase === "declaring" && !hand.declared.includes(seat)) {
    if (rules.declare === "sequential" && hand.on_turn !== seat) {
      return [element("p", `Waiting for seat ${hand.on_turn} to declare.`)];
    }
    const choices = rules.hi_lo ? ["high", "low", "both", "out"] : ["in", "out"];
    return choices.map((decision) =>
      button(decision === "in" ? "In" : decision[0].toUpperCase() + decision.slice(1),
        post(`Declare ${decision}`, "/declare", { decision })));
  }
  if (hand.phase === "drawing" && hand.drawing_turn === seat) {
    return [drawForm(hand.cards || [], rules.draw, post)];
  }
  if (hand.phase === "betting" && hand.betting && hand.betting.turn === seat) {
    const betting = hand.betting;
    const choices = betting.to_call > 0 ? ["call", "raise", "fold"] : ["check", "bet", "fold"];
    return choices.map((action) =>
      button(action[0].toUpperCase() + action.slice(1) + (action === "call" ? ` ${betting.to_call}` : ""),
        post(`${action}`, "/bet", { action })));
  }
  const waiting = {
    passing: "Waiting for the others to pass.",
    declaring: "You have declared; waiting for the others (decisions are revealed all at once).",
    drawing: `Waiting for seat ${hand.drawing_turn} to draw.`,
    betting: `Waiting for seat ${hand.betting && hand.betting.turn} to act.`,
    showdown: "Declarations are complete; waiting for the showdown.",
  };
  return [element("p", waiting[hand.phase] || `Phase: ${hand.phase}.`)];
}

/** Tick a box per card to discard (none: stand pat), then draw. */
function drawForm(cards, most, post) {
  const form = element("form", undefined, { "aria-label": `Draw up to ${most} cards` });
  const fieldset = element("fieldset");
  fieldset.append(element("legend", `Discard up to ${most} cards, then draw as many`));
  cards.forEach((card, i) => {
    const box = element("input", undefined, { type: "checkbox", id: `discard-${i}`, value: card });
    const label = element("label", undefined, { for: `discard-${i}` });
    label.append(cardElement(card));
    fieldset.append(box, label);
  });
  fieldset.append(element("button", "Draw", { type: "submit" }));
  form.append(fieldset);
  form.addEventListener("submit", (event) => {
    const discard = [...form.querySelectorAll("input:checked")].map((box) => box.value);
    return post(discard.length ? `Draw ${discard.length}` : "Stand pat", "/draw", { discard })(event);
  });
  return form;
}

/** The countdown to the hand's deadline, by the server's clock. */
function tick() {
  const hand = page.view && page.view.hand;
  const deadline = hand && hand.deadline && Date.parse(hand.deadline);
  const node = $("countdown");
  if (!deadline) {
    node.textContent = "-";
    node.removeAttribute("datetime");
    return;
  }
  const left = Math.max(0, Math.ceil((deadline - (Date.now() + page.skew)) / 1000));
  node.dateTime = hand.deadline;
  node.textContent = left > 0 ? `${left} s` : "the deadline has passed";
}

function logEvent(version, event) {
  const data = event.data || {};
  let text = `${version} ${event.type}`;
  if ("seat" in data) text += ` seat ${data.seat}`;
  if (data.decision) text += `: ${data.decision}`;
  if (event.type === "hand_dealt") text += ` hand ${data.hand}`;
  const item = element("li", text);
  $("events").prepend(item);
  while ($("events").children.length > 50) $("events").lastElementChild.remove();
}

function showReveal(data) {
  const said = Object.entries(data.decisions).map(([seat, d]) => `seat ${seat} ${d}`).join(", ");
  $("outcome").textContent = `Revealed: ${said || "nobody was dealt in"}.`;
}

function showOutcome(data) {
  const parts = [`Hand ${data.hand}: ${data.outcome.replaceAll("_", " ")}`];
  const won = Object.entries(data.won || {}).map(([seat, n]) => `seat ${seat} wins ${n}`);
  const matched = Object.entries(data.matched || {}).map(([seat, n]) => `seat ${seat} matches ${n}`);
  parts.push(...won, ...matched);
  const shown = Object.entries(data.shown || {});
  const node = $("outcome");
  node.replaceChildren(document.createTextNode(parts.join("; ") + "."));
  for (const [seat, cards] of shown) {
    const hand = cardsElement(cards);
    hand.dataset.seat = seat;
    node.append(element("br"), `Seat ${seat} shows `, hand);
  }
  offerHand(data.hand);
}

// --- the operator --------------------------------------------------------------------------

async function openTable(tableId) {
  page.table = tableId;
  page.last = 0;
  await refresh();
  page.last = page.view.version; // the stream sends what comes after the view just rendered
  follow();
  if (page.token === null) {
    $("manage").hidden = false;
    renderLinks();
  }
}

function renderLinks() {
  const links = JSON.parse(sessionStorage.getItem(LINKS + page.table) || "[]");
  $("seat-links").replaceChildren(...links.map(({ seat, player, url }) => {
    const item = element("li");
    item.append(element("a", `Seat ${seat}: ${player}`, { href: url, target: "_blank", rel: "noopener" }));
    return item;
  }));
}

function seatLink(seat, token) {
  const fragment = new URLSearchParams({ table: page.table, seat: String(seat), token });
  return `${location.origin}/play#${fragment}`;
}

function wireOperator() {
  const key = sessionStorage.getItem(KEY);
  if (key) $("key").value = key;
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, $("key").value);
    say("The key is kept in this tab.");
  });
  $("forget-key").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    $("key").value = "";
    say("The key is forgotten.");
  });
  $("create-form").addEventListener("submit", act("Create the table", async () => {
    const created = await api("POST", "/v1/tables", {
      preset: $("preset").value,
      ante: Number($("ante").value),
      decision_timeout_s: Number($("timeout").value),
    });
    $("open-table").value = created.table_id;
    await openTable(created.table_id);
  }));
  $("open-form").addEventListener("submit", act("Open the table", () => openTable($("open-table").value.trim())));
  $("seat-form").addEventListener("submit", act("Seat the player", async () => {
    const player = $("player-id").value.trim();
    const seated = await api("POST", tablePath("/players"), { player_id: player, buy_in: Number($("buy-in").value) });
    const links = JSON.parse(sessionStorage.getItem(LINKS + page.table) || "[]");
    links.push({ seat: seated.seat, player, url: seatLink(seated.seat, seated.token) });
    sessionStorage.setItem(LINKS + page.table, JSON.stringify(links));
    renderLinks();
    $("player-id").value = "";
  }));
  $("deal").addEventListener("click", act("Deal", () => api("POST", tablePath("/deal"), {})));
  $("resolve").addEventListener("click", act("Resolve", () => api("POST", tablePath("/resolve"), {})));
}

// --- checking a hand -----------------------------------------------------------------------

async function showVerification(history) {
  const report = await verifyHistory(history);
  const verdicts = {
    verified: "Verified: every card shown comes from the committed seed.",
    failed: "FAILED: this history does not match its seed.",
    not_verifiable: "Not verifiable from this history.",
    invalid: "Not a hand history.",
  };
  let verdict = verdicts[report.status];
  if (report.partial && report.ok) verdict += " (The hands shown after passes and draws were not compared here.)";
  $("verdict").textContent = `${report.handId || "hand"}: ${verdict}`;
  $("verdict").dataset.status = report.status;
  $("checks").replaceChildren(...report.checks.map((check) => {
    const item = element("li", undefined, { class: check.passed ? "ok" : "fail" });
    item.append(element("strong", check.passed ? "ok" : "FAIL"), ` ${check.name}: ${check.detail}`);
    return item;
  }));
}

function wireHistory() {
  $("hand-number").addEventListener("input", () => { $("hand-number").dataset.touched = "1"; });
  $("history-form").addEventListener("submit", act("Verify the hand", async () => {
    if (!page.table) throw new Error("open a table first");
    const history = await api("GET", tablePath(`/hands/${Number($("hand-number").value)}`));
    $("pasted").value = JSON.stringify(history, null, 1);
    await showVerification(history);
  }));
  $("paste-form").addEventListener("submit", act("Verify the pasted history", async () => {
    let history;
    try {
      history = JSON.parse($("pasted").value);
    } catch (error) {
      throw new Error(`not JSON: ${error.message}`);
    }
    await showVerification(history);
  }));
}

// --- start ---------------------------------------------------------------------------------

function start() {
  wireOperator();
  wireHistory();
  setInterval(tick, 250);
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get("token") && fragment.get("table") && fragment.get("seat")) {
    // A player's tab: act for the seat whose token the link holds.
    page.token = fragment.get("token");
    page.seat = Number(fragment.get("seat"));
    $("operator").hidden = true;
    $("player").hidden = false;
    openTable(fragment.get("table")).catch((error) => say(error.message));
  }
}

start();
