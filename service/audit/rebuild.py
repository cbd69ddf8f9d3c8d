"""Rebuild a table from its log alone and check everything on the way.

For each event, in order: its version follows the previous one; the hash chain holds; it
decodes; a deal's commitment is the SHA-256 of its seed, it mixed in exactly the client seeds
its players chose for it, and its cards are the deck that seed and its context derive (or,
for a carried-over deck, the rest of the previous deck), and the whole deal (who is dealt
in, the antes, the stacks) is the one the rules make then; a player's decision is one the
rules accept then (a hand in play, on turn, in time), the platform's what they decide at the
deadline; a resolution is exactly what the rules decide from the state before it, and so is
every action of a betting round (its turn, price and the bet it leaves); it applies; chips
are conserved after it (bets are chips in the pot; a void hands them back); and the table's
stored ledger holds exactly the entries the event makes, its running sums the replayed
stacks (`service.audit.ledger_check`). At the end the rebuilt state must equal the stored snapshot,
and the table views built from both must match. The report names the first discrepancy: its
version, and its `kind` (`KINDS`).

The log is read as stored, not through the store's checked read: a stream entry whose id is
not the next version (an event deleted, one inserted under an id of its own) is named at the
version where it happens, after the events before it were checked. Where the log ends is
compared with what is known to have existed: the table's version (its meta hash) and, with an
archive, how far the archive holds the table, and the events that are both in Redis and in
the archive must be the same bytes. docs/fairness.md, "What an audit detects", says what this
can and cannot find.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Protocol, runtime_checkable

import orjson

from service.audit.ledger_check import LedgerCheck, LedgerMismatch, StoredLedger
from service.eventlog.codec import GENESIS, CodecError, chain_hash, decode_current, upcast
from service.eventlog.store import (
    CorruptLog,
    EventStore,
    Loaded,
    StoredEvent,
    StoreError,
    StoreUnavailable,
)
from service.rules import events as ev
from service.rules.cards import hand_context, shuffled_deck
from service.rules.client_seeds import seeds_for_deal
from service.rules.commands import (
    bet,
    close_at_deadline,
    deal,
    deal_from,
    end_table,
    verify_declare,
)
from service.rules.events import event_from_data
from service.rules.limits import Allowance
from service.rules.play import draw_from
from service.rules.settlement import settle
from service.rules.state import TableState, evolve
from service.rules.times import later, parse_iso
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


KINDS = {
    "missing": "a version the log should hold is not there (deleted, or the log was truncated)",
    "unexpected": "an entry that is not the next version (inserted, duplicated, out of order),"
    " or events after the table's version",
    "unreadable": "an event that cannot be read (not JSON, no data, an unknown type)",
    "chain": "the hash chain breaks (edited, dropped, inserted or reordered without recomputing"
    " the chain)",
    "rules": "the event is not what the rules decide from the events before it (a deal that is"
    " not its seed's or its commitment's, a settlement, bet, decision or ante the rules would"
    " not make)",
    "chips": "chips are not conserved after the event",
    "archive": "the event differs from the archive's copy of it",
    "ledger": "the stored ledger disagrees with the event",
    "snapshot": "the stored snapshot is not the rebuilt table",
}
"""The kinds of discrepancy an audit names (the report's `first_discrepancy.kind`)."""


class Discrepancy(Exception):
    """The first thing found wrong, at an event version, and its kind (`KINDS`)."""

    def __init__(self, version: int, event_type: str, problem: str, kind: str = "rules") -> None:
        super().__init__(problem)
        self.version, self.event_type, self.problem = version, event_type, problem
        self.kind = kind


@runtime_checkable
class RawStream(Protocol):
    """A store whose log the audit can read as stored (`RedisEventStore`): the stream's entries
    unchecked, and the archive holding the events trimmed from it."""

    archive: Any

    def trimmed(self, table_id: str) -> int:
        """The version the stream starts after (the archive holds the ones before)."""
        ...

    def stream_entries(
        self, table_id: str, start: bytes, limit: int
    ) -> list[tuple[bytes, bytes | None]]:
        """The stream's ids and "data" fields from `start` on (``(<id>``: after it)."""
        ...


@runtime_checkable
class ArchivePositions(Protocol):
    """An archive that says how far it holds each table (`service.archive.Archive`)."""

    def positions(self, tables: Any) -> list[int]:
        """The version each (tenant, table id) is archived up to (0: nothing)."""
        ...

    def read(self, table_id: str, after: int, upto: int, limit: int | None) -> list[StoredEvent]:
        """The archived events after `after` up to `upto`; CorruptLog unless all there."""
        ...


class _Entry(NamedTuple):
    """One entry of the log as stored: its id, the version the id says (None: an id of no
    version), its data (None: none)."""

    id: str
    version: int | None
    data: bytes | None


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


def _check_dealt(state: TableState, event: ev.HandDealt) -> None:
    """The deal is the one the rules make at that moment from the committed seed: its cards,
    who is dealt in and in which order, the antes they pay, their stacks, the seeds mixed in.
    When it is not, `_check_deal` names a seed, commitment or card problem first (the deck is
    derived once on an honest log)."""
    try:
        expected = _redeal(state, event)
    except Exception:
        _check_deal(state, event)
        raise
    if expected != event:
        _check_deal(state, event)
        _require_same(expected, event, "deal")


def _redeal(state: TableState, event: ev.HandDealt) -> ev.HandDealt:
    """The rules' deal with `event`'s seed, time and next seed (and for a sandbox deal, its
    stacked cards). Players whose loss limit kept them out are kept out again (the limits are
    not in the log)."""
    dealt_in = set(event.order)
    kept_out = {
        seat.player_id: Allowance(limit=-1, net_loss=0)
        for seat in state.seated()
        if seat.seat not in dealt_in and event.removed.get(seat.seat, "loss_limit") == "loss_limit"
    }
    stacked: dict[str, tuple[str, ...]] = {}
    if event.stacked:
        stacked = {str(seat): cards for seat, cards in event.cards.items()}
        if event.kitty:
            stacked["kitty"] = event.kitty
    (expected,) = deal(
        state,
        bytes.fromhex(event.seed),
        parse_iso(event.at),
        event.client_seed,
        stacked,
        bytes.fromhex(event.next_seed),
        kept_out,
    )
    assert isinstance(expected, ev.HandDealt)
    if event.stacked:  # (the stacked "next" cards are not recorded as such)
        expected = replace(expected, deck=event.deck)
    return expected


def _check_decision(state: TableState, event: ev.DecisionMade) -> None:
    """A player's decision is one the rules accept then (a hand in play, its seat dealt in,
    not declared yet, on turn, in time); the platform's is what they decide once the deadline
    has passed; a dealer's automatic "in" follows everyone before them going out."""
    hand = state.hand
    if hand is None or hand.number != event.hand:
        raise ValueError(f"there is no hand {event.hand} in play to declare in")
    now = parse_iso(event.at)
    if event.by == "player":
        verify_declare(state, event.seat, event.decision, now)
        sequential = state.rules.declare == "sequential"  # (`declare`'s first event, unbuilt)
        deadline = later(now, state.rules.decision_timeout_s) if sequential else None
        if event.deadline != deadline:
            raise ValueError(f"the decision's next deadline is not the rules' {deadline}")
        return
    if event.by == "platform":
        expected = close_at_deadline(state, now)[0]
    else:
        dealer = hand.order[-1]
        if not (
            state.rules.dealer_auto_in
            and event.seat == dealer not in hand.decisions
            and all(hand.decisions.get(s) == "out" for s in hand.order[:-1])
        ):
            raise ValueError("an automatic decision the rules would not make")
        return
    _require_same(expected, event, "decision")


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


def _next_entry(replay: _Replay, entry: _Entry) -> bytes:
    """`entry`'s data, when it is the next version of the log; else the discrepancy."""
    expected = replay.state.version + 1
    if entry.version is None:
        problem = (
            f"the stream holds an entry with id {entry.id}, which is no version of the log, "
            f"where version {expected} belongs (inserted?)"
        )
        raise Discrepancy(expected, "?", problem, "unexpected")
    if entry.version > expected:
        missing = (
            f"version {expected} is missing"
            if entry.version == expected + 1
            else f"versions {expected} to {entry.version - 1} are missing"
        )
        problem = f"{missing}: the log goes from version {expected - 1} to {entry.version}"
        raise Discrepancy(expected, "?", f"{problem} (deleted?)", "missing")
    if entry.version < expected:
        problem = (
            f"version {entry.version} comes again where version {expected} belongs "
            "(duplicated or out of order)"
        )
        raise Discrepancy(expected, "?", problem, "unexpected")
    if entry.data is None:
        raise Discrepancy(expected, "?", f"the entry {entry.id} has no data", "unreadable")
    return entry.data


def _apply(replay: _Replay, version: int, raw: bytes) -> ev.Event:
    event_type = "?"
    kind = "unreadable"
    try:
        record = orjson.loads(raw)
        if not isinstance(record, dict):
            raise ValueError("an event must be a JSON object")
        event_type = str(record.get("type"))
        if version != replay.state.version + 1:  # (the entries were checked: a caller's slip)
            raise ValueError(f"expected version {replay.state.version + 1}")
        kind = "chain"
        if record.get("hash") != chain_hash(replay.head, record):
            raise ValueError(
                "the hash chain is broken here (edited, dropped, inserted or reordered)"
            )
        kind = "unreadable"
        event = event_from_data(upcast(record))
        kind = "rules"
        if isinstance(event, ev.HandDealt):
            _check_dealt(replay.state, event)
        elif isinstance(event, ev.DecisionMade):
            _check_decision(replay.state, event)
        elif isinstance(event, ev.HandResolved):
            _check_resolution(replay.state, event)
        elif isinstance(event, ev.BetMade):
            _check_bet(replay.state, event)
        elif isinstance(event, ev.TableCreated):
            if event.next_seed and (
                hashlib.sha256(bytes.fromhex(event.next_seed)).hexdigest() != event.next_commitment
            ):
                raise ValueError("the first hand's commitment is not the SHA-256 of its seed")
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
        raise Discrepancy(version, event_type, str(exc) or type(exc).__name__, kind) from exc
    state = replay.state
    moves_chips = event_type in _CHIP_EVENTS  # `evolve` changes chips for these types only
    if moves_chips and state.chips_on_table() != state.bought_in - state.cashed_out:
        raise Discrepancy(version, event_type, "chips are not conserved after this event", "chips")
    replay.head = record["hash"]
    replay.checked += 1
    return event


def _entries(store: EventStore, table_id: str) -> Iterator[_Entry]:
    """The table's log as stored, oldest first: from a `RawStream`, the archived events, then
    the stream's entries unchecked; from another store, its (checked) read."""
    if not isinstance(store, RawStream):
        after = 0
        while True:
            page = store.read(table_id, after, PAGE)
            yield from (_Entry(f"{s.version}-0", s.version, s.data) for s in page)
            if len(page) < PAGE:
                return
            after = page[-1].version
    trimmed = store.trimmed(table_id)
    yield from _from_archive(store, table_id, 0, trimmed)
    start, following = (f"({trimmed}-0".encode() if trimmed else b"-"), trimmed + 1
    while True:
        raw = store.stream_entries(table_id, start, PAGE)
        first = _version_of(raw[0][0]) if raw else None
        if first is not None and first > following and store.trimmed(table_id) >= first - 1:
            # Trimmed while the audit read the stream: the archive holds those events.
            yield from _from_archive(store, table_id, following - 1, first - 1)
        for entry_id, data in raw:
            version = _version_of(entry_id)
            yield _Entry(entry_id.decode(errors="replace"), version, data)
            following = following if version is None else version + 1
        if len(raw) < PAGE:
            return
        start = b"(" + raw[-1][0]


def _from_archive(store: RawStream, table_id: str, after: int, upto: int) -> Iterator[_Entry]:
    """The archived events after `after` up to `upto` (trimmed from the stream)."""
    if upto > after and store.archive is None:
        raise StoreError(f"events up to {upto} are archived, and the audit has no archive")
    while after < upto:
        page = _archived_page(store.archive, table_id, after, upto)
        yield from (_Entry(f"{s.version}-0", s.version, s.data) for s in page)
        if not page or page[-1].version < min(upto, after + PAGE):
            version = after + len(page) + 1
            problem = (
                f"version {version} is missing: the stream was trimmed up to {upto}, and "
                "the archive does not hold it"
            )
            raise Discrepancy(version, "?", problem, "missing")
        after = page[-1].version


def _archived_page(archive: Any, table_id: str, after: int, upto: int) -> list[StoredEvent]:
    """Up to `PAGE` archived events after `after`: as many as are there in a row."""
    try:
        return list(archive.read(table_id, after, upto, PAGE))
    except CorruptLog:  # a version is missing: find how many are there before it
        there, lacking = 0, min(PAGE, upto - after)
        while lacking - there > 1:
            middle = (there + lacking) // 2
            try:
                archive.read(table_id, after, upto, middle)
                there = middle
            except CorruptLog:
                lacking = middle
        return list(archive.read(table_id, after, upto, there)) if there else []


def _version_of(entry_id: bytes) -> int | None:
    """The version a stream id ``<version>-0`` says, None for any other id."""
    milliseconds, dash, sequence = entry_id.partition(b"-")
    if dash and sequence == b"0" and milliseconds.isdigit() and milliseconds[:1] != b"0":
        return int(milliseconds)
    return None


class _ArchivedCopies:
    """The archive's copies of the versions after the stream's trim up to how far the archive
    holds the table, to compare with the stream's."""

    def __init__(self, store: EventStore, table_id: str) -> None:
        self.table_id = table_id
        self.archive: ArchivePositions | None = None
        self.upto = self.after = 0
        archive = store.archive if isinstance(store, RawStream) else None
        if isinstance(archive, ArchivePositions):
            self.archive = archive
            (self.upto,) = archive.positions([("", table_id)])  # (the tenant is not needed)
            self.after = store.trimmed(table_id) if isinstance(store, RawStream) else 0
        self.copies: dict[int, bytes] = {}

    def check(self, version: int, data: bytes, event_type: str) -> None:
        """The stream's `data` of `version` must be the archive's, when it holds it."""
        if self.archive is None or version <= self.after or version > self.upto:
            return
        if version not in self.copies:
            page = _archived_page(self.archive, self.table_id, version - 1, self.upto)
            self.copies = {stored.version: stored.data for stored in page}
        copy = self.copies.pop(version, None)
        if copy is None:
            problem = f"the archive holds the table up to {self.upto}, but not version {version}"
            raise Discrepancy(version, event_type, problem, "archive")
        if copy != data:
            problem = "the event differs from the archive's copy of it (changed after archiving)"
            raise Discrepancy(version, event_type, problem, "archive")


def audit_table(
    store: EventStore, table_id: str, ledger: StoredLedger | None = None
) -> dict[str, Any]:
    """Replay and check `table_id`'s whole log, and reconcile its `ledger` with it when
    given; returns the report."""
    started = time.perf_counter()
    replay = _Replay(TableState())
    discrepancy: Discrepancy | None = None
    loaded: Loaded | None = None
    books: LedgerCheck | None = None
    try:
        archived = _ArchivedCopies(store, table_id)  # (first: it never holds more than a load)
        with contextlib.suppress(StoreError):  # (the replay below finds what cannot be read)
            loaded = store.load(table_id)
        recorded = _recorded_version(store, table_id, loaded)
        for entry in _entries(store, table_id):
            if loaded is not None and replay.state.version == loaded.version:
                _check_beyond(store, table_id, loaded, entry)
                break  # (the audit covers the table as it was loaded)
            data = _next_entry(replay, entry)
            version = replay.state.version + 1
            event = _apply(replay, version, data)
            if ledger is not None and books is None:  # the first event names the tenant
                books = LedgerCheck(*ledger.table_entries(replay.state.tenant, table_id))
            if books is not None:
                books.check(replay.state, version, event)
            archived.check(version, data, event.TYPE)
        _check_length(replay, recorded, archived.upto)
        if books is not None:
            books.check_end(replay.state.version)
        if loaded is None:
            problem = "the table's snapshot and the events after it cannot be read"
            raise Discrepancy(replay.state.version, "snapshot", problem, "snapshot")
        _compare_snapshot(replay, loaded)
    except Discrepancy as found:
        discrepancy = found
    except LedgerMismatch as found:
        discrepancy = Discrepancy(found.version, found.event_type, found.problem, "ledger")
    except StoreUnavailable as exc:  # Redis or the archive unreachable: no finding at all
        return {"ok": False, "table_id": table_id, "error": f"the log cannot be read: {exc}"}
    except StoreError as exc:
        discrepancy = Discrepancy(
            replay.state.version + 1, "?", f"the log cannot be read: {exc}", "unreadable"
        )
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
            "kind": discrepancy.kind,
            "problem": discrepancy.problem,
        },
    }


def _check_beyond(store: EventStore, table_id: str, loaded: Loaded, entry: _Entry) -> None:
    """`entry` follows the table's version as the audit loaded it: an event appended since
    (the table is live), unless the table is still at that version."""
    with contextlib.suppress(StoreError):
        if store.load(table_id).version > loaded.version:
            return
    event_type = "?"
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        event_type = str(orjson.loads(entry.data or b"").get("type", "?"))
    after = loaded.version + 1
    problem = (
        f"the stream goes on after the table's version {loaded.version} (entry {entry.id}): "
        f"version {after} and after are not the table's (appended outside the service?)"
    )
    raise Discrepancy(after, event_type, problem, "unexpected")


def _recorded_version(store: EventStore, table_id: str, loaded: Loaded | None) -> int | None:
    """The table's version as its meta hash records it: the load's, or, when the load failed
    (a tail cut short no longer loads), the meta's own field; None when that does not parse."""
    if loaded is not None:
        return loaded.version
    try:
        (found,) = store.dues([table_id])
    except StoreError:
        return None
    return None if isinstance(found, CorruptLog) else found[0]


def _check_length(replay: _Replay, recorded: int | None, archived: int) -> None:
    """The log must reach the table's version (its meta hash) and as far as the archive holds
    it (the log beyond the table's version: `_check_beyond`)."""
    end = replay.state.version
    known = [] if recorded is None else [(recorded, "the table is at version")]
    known.append((archived, "the archive holds it up to version"))
    for upto, what in known:
        if end < upto:
            missing = (
                f"version {upto} is" if upto == end + 1 else f"versions {end + 1} to {upto} are"
            )
            problem = f"the log ends at version {end}, but {what} {upto}: {missing} missing"
            raise Discrepancy(end + 1, "?", f"{problem} (truncated?)", "missing")


def _compare_snapshot(replay: _Replay, loaded: Loaded) -> None:
    """The stored snapshot, with the events after it applied, must be the rebuilt state."""
    state, version = replay.state, loaded.version
    if loaded.snapshot is None:
        raise Discrepancy(0, "snapshot", "the table has no snapshot", "snapshot")
    try:
        stored, head = decode_current(loaded.snapshot, loaded.tail)
    except CodecError as exc:
        problem = f"the events after the snapshot do not follow it: {exc}"
        raise Discrepancy(version, "snapshot", problem, "snapshot") from exc
    if state.version != version:  # (`_check_length` found it first)
        problem = f"the log ends at {state.version}, the table says {version}"
        raise Discrepancy(state.version, "snapshot", problem, "snapshot")
    if head != replay.head:
        problem = "the snapshot's chain head is not the log's"
        raise Discrepancy(version, "snapshot", problem, "snapshot")
    if stored.to_data() != state.to_data():
        fields = [k for k, v in stored.to_data().items() if state.to_data().get(k) != v]
        problem = f"the snapshot differs in: {', '.join(fields)}"
        raise Discrepancy(version, "snapshot", problem, "snapshot")
    viewer = Viewer(AUDITOR)
    if table_view(stored, viewer) != table_view(state, viewer):
        problem = "the live view differs from the rebuilt one"
        raise Discrepancy(version, "snapshot", problem, "snapshot")
