"""Rebuild a table from its log alone and check everything on the way.

For each event, in order: its version follows the previous one; the hash chain holds; it
decodes; a deal's commitment is the SHA-256 of its seed, it mixed in exactly the client seeds
its players chose for it, and its cards are the deck that seed and its context derive (or,
for a carried-over deck, the rest of the previous deck); a resolution is exactly what the
rules decide from the state before it, and so is every action of a betting round (its
turn, price and the bet it leaves); it applies; chips are conserved after it (bets are chips
in the pot; a void hands them back); and the table's stored ledger holds exactly the entries
the event makes, its running sums the replayed stacks (`service.ledger_check`). At the end
the rebuilt state must equal the stored snapshot, and the table views built from both must
match. The report names the first discrepancy.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from dataclasses import dataclass
from typing import Any

import orjson

from service.eventlog.codec import GENESIS, CodecError, chain_hash, decode_current, upcast
from service.eventlog.store import EventStore, Loaded, StoreError
from service.ledger_check import LedgerCheck, LedgerMismatch, StoredLedger
from service.rules import events as ev
from service.rules.cards import hand_context, shuffled_deck
from service.rules.client_seeds import seeds_for_deal
from service.rules.commands import bet, close_at_deadline, deal_from, end_table
from service.rules.events import event_from_data
from service.rules.play import draw_from
from service.rules.settlement import settle
from service.rules.state import TableState, evolve
from service.rules.times import parse_iso
from service.rules.views import AUDITOR, Viewer, table_view

PAGE = 5000
_CHIP_EVENTS = frozenset(
    e.TYPE
    for e in (
        ev.PlayerSeated,
        ev.ChipsAdded,
        ev.PlayerLeft,
        ev.HandDealt,
        ev.BetMade,
        ev.HandResolved,
        ev.HandVoided,
        ev.TableEnded,
    )
)


class Discrepancy(Exception):
    """The first thing found wrong, at an event version."""

    def __init__(self, version: int, event_type: str, problem: str) -> None:
        super().__init__(problem)
        self.version, self.event_type, self.problem = version, event_type, problem


@dataclass
class _Replay:
    state: TableState
    head: str = GENESIS
    checked: int = 0


def _check_deal(state: TableState, event: ev.HandDealt) -> None:
    seed = bytes.fromhex(event.seed)
    if hashlib.sha256(seed).hexdigest() != event.commitment:
        raise ValueError("the commitment is not the SHA-256 of the revealed seed")
    if state.next_commitment and event.commitment != state.next_commitment:
        raise ValueError("the hand's seed is not the one committed before the deal")
    if event.next_seed and hashlib.sha256(bytes.fromhex(event.next_seed)).hexdigest() != (
        event.next_commitment
    ):
        raise ValueError("the next hand's commitment is not the SHA-256 of its seed")
    chosen = seeds_for_deal(state, event.order)
    if event.client_seeds != chosen:
        raise ValueError("the players' client seeds are not the ones the dealt-in seats chose")
    if event.client_seed and chosen:
        raise ValueError("an operator's client seed was mixed in after the players' seeds")
    if event.stacked:
        return  # a sandbox deal: the caller fixed the cards, there is no deck to derive
    context = hand_context(state.table_id, event.hand, event.client_seed, chosen)
    if event.deck_context and event.deck_context.encode() != context:
        raise ValueError("the recorded deck context is not this hand's")
    if event.reshuffled:
        deck: tuple[str, ...] | list[str] = shuffled_deck(seed, context)
    else:
        deck = state.deck
    dealt, rest = deal_from(deck, event.order, state.rules.cards, state.rules.kitty)
    expected = {int(p): c for p, c in dealt.items() if p != "kitty"}
    if expected != event.cards or dealt.get("kitty", ()) != event.kitty or rest != event.deck:
        raise ValueError("the dealt cards are not the deck derived from the seed")


def _check_cards(
    state: TableState, event: ev.CommunityCardDealt | ev.CardsDrawn | ev.CardPassed
) -> None:
    hand = state.hand
    if hand is None or hand.number != event.hand:
        raise ValueError("no such hand in play")
    if isinstance(event, ev.CommunityCardDealt):
        if not state.deck or event.card != state.deck[0]:
            raise ValueError("the community card is not the top of the deck")
    elif isinstance(event, ev.CardPassed):
        if event.card not in hand.cards[event.seat]:
            raise ValueError("the passed card is not in the passer's hand")
    else:
        if any(card not in hand.cards[event.seat] for card in event.discarded):
            raise ValueError("a discarded card is not in the drawer's hand")
        expected = draw_from(state, len(event.discarded))
        if expected != (event.drawn, event.deck, event.reshuffled):
            raise ValueError("the drawn cards are not the top of the deck")


def _require_same(expected: ev.Event, event: ev.Event, what: str) -> None:
    """`event` must be exactly what the rules decided (`expected`); name the fields if not."""
    if expected != event:
        differs = [
            name
            for name in event.__dataclass_fields__
            if getattr(expected, name) != getattr(event, name)
        ]
        raise ValueError(f"the {what} differs from the rules' in: {', '.join(differs)}")


def _check_resolution(state: TableState, event: ev.HandResolved) -> None:
    _require_same(settle(state, parse_iso(event.at)), event, "settlement")


def _check_bet(state: TableState, event: ev.BetMade) -> None:
    """A betting action is what the rules decide for that seat and action at that moment (the
    platform's, what they decide once the deadline has passed)."""
    now = parse_iso(event.at)
    if event.by == "platform":
        (expected,) = close_at_deadline(state, now)
    else:
        (expected,) = bet(state, event.seat, event.action, now)
    _require_same(expected, event, "bet")


def _apply(replay: _Replay, version: int, raw: bytes) -> ev.Event:
    event_type = "?"
    try:
        record = orjson.loads(raw)
        event_type = str(record.get("type"))
        if version != replay.state.version + 1:
            raise ValueError(f"expected version {replay.state.version + 1}")
        if record.get("hash") != chain_hash(replay.head, record):
            raise ValueError("the hash chain is broken here (edited, dropped or reordered)")
        event = event_from_data(upcast(record))
        if isinstance(event, ev.HandDealt):
            _check_deal(replay.state, event)
        elif isinstance(event, ev.HandResolved):
            _check_resolution(replay.state, event)
        elif isinstance(event, ev.BetMade):
            _check_bet(replay.state, event)
        elif isinstance(event, ev.TableEnded):
            (expected,) = end_table(replay.state, parse_iso(event.at))
            _require_same(expected, event, "end of the table")
        elif isinstance(event, ev.CommunityCardDealt | ev.CardsDrawn | ev.CardPassed):
            _check_cards(replay.state, event)
        elif isinstance(event, ev.DeclarationsRevealed):
            hand = replay.state.hand
            if hand is None or {**hand.decisions} != event.decisions:
                raise ValueError("the revealed decisions are not the ones declared")
        evolve(replay.state, event)
    except Discrepancy:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure here is a finding about this event
        raise Discrepancy(version, event_type, str(exc) or type(exc).__name__) from exc
    state = replay.state
    moves_chips = event_type in _CHIP_EVENTS  # `evolve` changes chips for these types only
    if moves_chips and state.chips_on_table() != state.bought_in - state.cashed_out:
        raise Discrepancy(version, event_type, "chips are not conserved after this event")
    replay.head = record["hash"]
    replay.checked += 1
    return event


def audit_table(
    store: EventStore, table_id: str, ledger: StoredLedger | None = None
) -> dict[str, Any]:
    """Replay and check `table_id`'s whole log, and reconcile its `ledger` with it when
    given; returns the report."""
    started = time.perf_counter()
    replay = _Replay(TableState())
    discrepancy: Discrepancy | None = None
    loaded: Loaded | None = None
    with contextlib.suppress(StoreError):  # (the replay below finds what cannot be read)
        loaded = store.load(table_id)
    after = 0
    books: LedgerCheck | None = None
    try:
        while True:
            page = store.read(table_id, after, PAGE)
            for stored in page:
                event = _apply(replay, stored.version, stored.data)
                if ledger is not None and books is None:  # the first event names the tenant
                    books = LedgerCheck(*ledger.table_entries(replay.state.tenant, table_id))
                if books is not None:
                    books.check(replay.state, stored.version, event)
            if len(page) < PAGE:
                break
            after = page[-1].version
        if books is not None:
            books.check_end(replay.state.version)
        if loaded is None:
            problem = "the table's snapshot and the events after it cannot be read"
            raise Discrepancy(replay.state.version, "snapshot", problem)
        _compare_snapshot(replay, loaded)
    except Discrepancy as found:
        discrepancy = found
    except LedgerMismatch as found:
        discrepancy = Discrepancy(found.version, found.event_type, found.problem)
    except StoreError as exc:  # e.g. a gap in the stream's versions
        discrepancy = Discrepancy(replay.state.version + 1, "?", f"the log cannot be read: {exc}")
    elapsed = time.perf_counter() - started
    report: dict[str, Any] = {} if books is None else {"ledger": books.summary()}
    return {
        **report,
        "ok": discrepancy is None,
        "table_id": table_id,
        "events_checked": replay.checked,
        "version": loaded.version if loaded is not None else replay.state.version,
        "duration_ms": round(elapsed * 1000, 3),
        "events_per_second": round(replay.checked / elapsed) if elapsed else None,
        "first_discrepancy": None
        if discrepancy is None
        else {
            "version": discrepancy.version,
            "event_type": discrepancy.event_type,
            "problem": discrepancy.problem,
        },
    }


def _compare_snapshot(replay: _Replay, loaded: Loaded) -> None:
    """The stored snapshot, with the events after it applied, must be the rebuilt state."""
    state, version = replay.state, loaded.version
    if loaded.snapshot is None:
        raise Discrepancy(0, "snapshot", "the table has no snapshot")
    try:
        stored, head = decode_current(loaded.snapshot, loaded.tail)
    except CodecError as exc:
        problem = f"the events after the snapshot do not follow it: {exc}"
        raise Discrepancy(version, "snapshot", problem) from exc
    if state.version != version:
        raise Discrepancy(
            state.version, "snapshot", f"the log ends at {state.version}, the table says {version}"
        )
    if head != replay.head:
        raise Discrepancy(version, "snapshot", "the snapshot's chain head is not the log's")
    if stored.to_data() != state.to_data():
        fields = [k for k, v in stored.to_data().items() if state.to_data().get(k) != v]
        raise Discrepancy(version, "snapshot", f"the snapshot differs in: {', '.join(fields)}")
    viewer = Viewer(AUDITOR)
    if table_view(stored, viewer) != table_view(state, viewer):
        raise Discrepancy(version, "snapshot", "the live view differs from the rebuilt one")
