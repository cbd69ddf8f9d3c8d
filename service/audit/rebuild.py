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
from dataclasses import dataclass
from typing import Any

import orjson

from service.audit.ledger_check import LedgerCheck, LedgerMismatch, StoredLedger
from service.audit.wallet_books import StoredWallet, WalletBooks, WalletMismatch
from service.eventlog.codec import GENESIS, CodecError, chain_hash, decode_current, upcast
from service.eventlog.store import (
    CorruptLog,
    EventStore,
    Loaded,
    StoreError,
    StoreUnavailable,
)
from service.rules import events as ev
from service.rules import protection_events as pe
from service.rules.commands import (
    end_table,
)
from service.rules.events import event_from_data
from service.rules.state import TableState, evolve
from service.rules.times import parse_iso
from service.rules.views import AUDITOR, PRIVATE_EVENTS, Viewer, table_view

from .findings import Discrepancy
from .redecide import (
    check_bet,
    check_cards,
    check_dealt,
    check_decision,
    check_protection,
    check_resolution,
    require_same,
)
from .stored_log import ArchivedCopies, Entry, entries

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


PROTECTION_TYPES = (*PRIVATE_EVENTS, pe.PlayerAway, pe.PlayerBack)


@dataclass
class _Replay:
    state: TableState
    head: str = GENESIS
    checked: int = 0


def _next_entry(replay: _Replay, entry: Entry) -> bytes:
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
            check_dealt(replay.state, event)
        elif isinstance(event, ev.DecisionMade):
            check_decision(replay.state, event)
        elif isinstance(event, ev.HandResolved):
            check_resolution(replay.state, event)
        elif isinstance(event, ev.BetMade):
            check_bet(replay.state, event)
        elif isinstance(event, ev.TableCreated):
            if event.next_seed and (
                hashlib.sha256(bytes.fromhex(event.next_seed)).hexdigest() != event.next_commitment
            ):
                raise ValueError("the first hand's commitment is not the SHA-256 of its seed")
        elif isinstance(event, ev.TableEnded):
            (expected,) = end_table(replay.state, parse_iso(event.at))
            require_same(expected, event, "end of the table")
        elif isinstance(event, ev.CommunityCardDealt | ev.CardsDrawn | ev.CardPassed):
            check_cards(replay.state, event)
        elif isinstance(event, PROTECTION_TYPES):
            check_protection(replay.state, event)
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


def audit_table(
    store: EventStore,
    table_id: str,
    ledger: StoredLedger | None = None,
    wallet: StoredWallet | None = None,
) -> dict[str, Any]:
    """Replay and check `table_id`'s whole log, and reconcile its `ledger` and its `wallet`
    transactions with it when given; returns the report."""
    started = time.perf_counter()
    replay = _Replay(TableState())
    books = _Books(table_id, ledger, wallet)
    discrepancy: Discrepancy | None = None
    loaded: Loaded | None = None
    try:
        archived = ArchivedCopies(store, table_id)  # (first: it never holds more than a load)
        with contextlib.suppress(StoreError):  # (the replay below finds what cannot be read)
            loaded = store.load(table_id)
        recorded = _recorded_version(store, table_id, loaded)
        _replay_log(store, table_id, loaded, replay, books, archived)
        _check_length(replay, recorded, archived.upto)
        books.check_end(replay.state.version)
        if loaded is None:
            problem = "the table's snapshot and the events after it cannot be read"
            raise Discrepancy(replay.state.version, "snapshot", problem, "snapshot")
        _compare_snapshot(replay, loaded)
    except Discrepancy as found:
        discrepancy = found
    except LedgerMismatch as found:
        discrepancy = Discrepancy(found.version, found.event_type, found.problem, "ledger")
    except WalletMismatch as found:
        discrepancy = Discrepancy(found.version, found.event_type, found.problem, "wallet")
    except StoreUnavailable as exc:  # Redis or the archive unreachable: no finding at all
        return {"ok": False, "table_id": table_id, "error": f"the log cannot be read: {exc}"}
    except StoreError as exc:
        discrepancy = Discrepancy(
            replay.state.version + 1, "?", f"the log cannot be read: {exc}", "unreadable"
        )
    elapsed = time.perf_counter() - started
    return {
        **books.summary(),
        "ok": discrepancy is None,
        "table_id": table_id,
        "events_checked": replay.checked,
        "version": loaded.version if loaded is not None else replay.state.version,
        "duration_ms": round(elapsed * 1000, 3),
        "events_per_second": round(replay.checked / elapsed) if elapsed else None,
        "first_discrepancy": None if discrepancy is None else discrepancy.as_report(),
    }


class _Books:
    """The table's stored books, reconciled with the log as it is replayed: its ledger and its
    wallet transactions, each when given. Both are read at the first event, which names the
    table's tenant."""

    def __init__(
        self, table_id: str, ledger: StoredLedger | None, wallet: StoredWallet | None
    ) -> None:
        self._table_id = table_id
        self._ledger = ledger
        self._wallet = wallet
        self.ledger: LedgerCheck | None = None
        self.wallet: WalletBooks | None = None

    def check(self, state: TableState, version: int, event: ev.Event) -> None:
        """The entries the event at `version` makes are those stored (`state`: after it)."""
        if self._ledger is not None and self.ledger is None:
            self.ledger = LedgerCheck(*self._ledger.table_entries(state.tenant, self._table_id))
        if self.ledger is not None:
            self.ledger.check(state, version, event)
        if self._wallet is not None and self.wallet is None:
            found = self._wallet.table_transactions(state.tenant, self._table_id)
            self.wallet = WalletBooks(self._table_id, *found)
        if self.wallet is not None:
            self.wallet.check(version, event)

    def check_end(self, version: int) -> None:
        """Nothing is stored beyond the log's end at `version`."""
        if self.ledger is not None:
            self.ledger.check_end(version)
        if self.wallet is not None:
            self.wallet.check_end(version)

    def summary(self) -> dict[str, Any]:
        """The report's "ledger" and "wallet" parts, for the books that were read."""
        report: dict[str, Any] = {} if self.ledger is None else {"ledger": self.ledger.summary()}
        if self.wallet is not None:
            report["wallet"] = self.wallet.summary()
        return report


def _replay_log(
    store: EventStore,
    table_id: str,
    loaded: Loaded | None,
    replay: _Replay,
    books: _Books,
    archived: ArchivedCopies,
) -> None:
    """Check and apply every event of the stored log, up to the table's version as `loaded`
    (an entry beyond it must have been appended since), reconciling the `books` and the
    `archived` copies event by event."""
    for entry in entries(store, table_id):
        if loaded is not None and replay.state.version == loaded.version:
            _check_beyond(store, table_id, loaded, entry)
            break  # (the audit covers the table as it was loaded)
        data = _next_entry(replay, entry)
        version = replay.state.version + 1
        event = _apply(replay, version, data)
        books.check(replay.state, version, event)
        archived.check(version, data, event.TYPE)


def _check_beyond(store: EventStore, table_id: str, loaded: Loaded, entry: Entry) -> None:
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
