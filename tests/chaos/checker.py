"""The chaos run's checker: pure functions over what was read back at the end (every table's
log as Redis and the archive hold it, the ledger's pages, the webhooks received, the audits)
and the clients' history. Each check returns its violations (kind, detail); none means the run
kept every promise. Unit-tested on crafted histories (tests/test_chaos.py)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from service.eventlog.codec import GENESIS, chain_hash, decode_record, event_from_data, upcast
from service.projections.webhook_messages import webhook_events
from service.rules import ledger
from service.rules.state import replay
from tests.chaos.workload import Record

Violation = tuple[str, str]

EFFECTS: dict[str, tuple[str, int]] = {
    # command -> (the event type it appends, how far before the answer's version it may be)
    "create": ("table_created", 0),
    "seat": ("player_seated", 0),
    "top_up": ("chips_added", 0),
    "leave": ("player_left", 0),
    "deal": ("hand_dealt", 0),
    "declare": ("decision_made", 1),  # the reveal may follow it
    "resolve": ("hand_resolved", 2),
}
ASKED_ONLY = ("player_seated", "chips_added", "player_left", "hand_dealt")
"""Event types only a client's command makes: each one in a log is some command's effect."""


@dataclass
class Observed:
    """Everything read back: per table, its events by version in Redis and in the archive."""

    records: list[Record]
    redis: dict[str, dict[int, bytes]]
    archive: dict[str, dict[int, bytes]]
    ledgers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    webhooks: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    audits: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    behind: dict[str, str] = field(default_factory=dict)  # tables the archive did not catch up
    undelivered: dict[str, int] = field(default_factory=dict)  # what the store holds of them
    drained_s: float | None = None  # how long the webhooks due took to arrive, once read back

    def log(self, table: str) -> dict[int, dict[str, Any]]:
        """The table's log, decoded: Redis's, after the archive's events of the versions
        trimmed from Redis (an archived event beyond Redis's log is a fork, not the log)."""
        live = self.redis.get(table, {})
        first = min(live, default=max(self.archive.get(table, {}), default=0) + 1)
        raws = {v: r for v, r in self.archive.get(table, {}).items() if v < first} | live
        return {version: decode_record(raw) for version, raw in sorted(raws.items())}


def _matches(record: Record, event: dict[str, Any]) -> bool:
    data, answer, body = event["data"], record.answer, record.body or {}
    if record.command == "seat":
        return bool(data["player_id"] == body["player_id"] and data["seat"] == answer["seat"])
    if record.command == "top_up":
        return bool(data["amount"] == body["amount"] and data["seat"] == answer.get("seat"))
    if record.command == "declare":
        return bool(data["seat"] == answer["seat"] and data["decision"] == body["decision"])
    if record.command == "leave":
        return bool(data["seat"] == answer["seat"])
    if record.command in ("deal", "resolve"):
        return bool(data["hand"] == answer["hand"])
    return True


def acknowledged_effects(observed: Observed) -> tuple[list[Violation], dict[str, int]]:
    """Every acknowledged command's event is in its table's log where its answer said, and no
    event is claimed by two commands (one of them was lost, and the other made the same
    event again); every event only clients make is some command's (or a command whose outcome
    the client never learned): else a command took effect twice."""
    found: list[Violation] = []
    claimed: dict[tuple[str, int], str] = {}
    counts = Counter[str]()
    logs = {table: observed.log(table) for table in {r.table for r in observed.records}}
    for record in observed.records:
        if not record.acknowledged or record.command not in EFFECTS:
            continue
        counts["acknowledged"] += 1
        kind, before = EFFECTS[record.command]
        version = int(record.answer.get("version", 0) or 1)
        log = logs[record.table]
        hits = [
            v
            for v in range(version - before, version + 1)
            if v in log and log[v]["type"] == kind and _matches(record, log[v])
        ]
        if not hits:
            counts["lost"] += 1
            found.append(
                (
                    "lost",
                    f"{record.table}: {record.command} {record.key} answered "
                    f"{record.status} at version {version}, not in the log",
                )
            )
            continue
        previous = claimed.setdefault((record.table, hits[0]), record.key)
        if previous != record.key:  # two commands, one event: one of them is not in the log
            counts["lost"] += 1
            found.append(("lost", f"{record.table}@{hits[0]}: the one event of two commands, "
                          f"{previous} and {record.key}"))  # fmt: skip
    found += _unexplained(observed, logs, set(claimed))
    return found, dict(counts)


def _unexplained(
    observed: Observed, logs: dict[str, dict[int, dict[str, Any]]], claimed: set[tuple[str, int]]
) -> list[Violation]:
    unknown = Counter(r.table for r in observed.records if r.status is None)
    found: list[Violation] = []
    for table, log in logs.items():
        extra = [v for v, e in log.items() if e["type"] in ASKED_ONLY and (table, v) not in claimed]
        if len(extra) > unknown[table]:
            found.append(
                (
                    "duplicate",
                    f"{table}: events {extra} made by no acknowledged "
                    f"command ({unknown[table]} outcomes unknown)",
                )
            )
    return found


def versions_monotonic(records: Iterable[Record]) -> list[Violation]:
    """A client's own commands on a table run one after another: each answered version is
    above the one before it (a version going backwards is a lost event)."""
    last: dict[str, tuple[int, str]] = {}
    found: list[Violation] = []
    for record in sorted(records, key=lambda r: r.sent):
        if not record.acknowledged or "version" not in record.answer or record.replayed:
            continue
        version = int(record.answer["version"])
        before = last.get(record.table)
        if before is not None and version <= before[0]:
            found.append(
                (
                    "backwards",
                    f"{record.table}: {record.key} answered version {version} "
                    f"after {before[1]} answered {before[0]}",
                )
            )
        last[record.table] = (version, record.key)
    return found


def chains_and_forks(observed: Observed, table: str) -> list[Violation]:
    """The archive equals Redis hash by hash where both hold an event, the archive has no gap,
    and the whole log chains from the first event to the last."""
    archived, live = observed.archive.get(table, {}), observed.redis.get(table, {})
    found: list[Violation] = []
    for version in sorted(set(archived) & set(live)):
        if decode_record(archived[version])["hash"] != decode_record(live[version])["hash"]:
            found.append(
                ("fork", f"{table}@{version}: the archive and Redis hold different events")
            )
            break
    if archived and sorted(archived) != list(range(1, max(archived) + 1)):
        found.append(("archive", f"{table}: the archive has gaps"))
    if live and archived and max(archived) < max(live) and max(archived) + 1 < min(live):
        found.append(("archive", f"{table}: versions between the archive and Redis are missing"))
    if archived and live and max(archived) > max(live):
        found.append(
            (
                "fork",
                f"{table}: the archive holds events up to {max(archived)}, Redis's "
                f"log ends at {max(live)}",
            )
        )
    head = GENESIS
    for version, record in observed.log(table).items():
        if chain_hash(head, record) != record.get("hash"):
            found.append(("chain", f"{table}@{version}: the hash does not chain"))
            break
        head = record["hash"]
    return found


def conservation_and_ledger(observed: Observed, table: str) -> list[Violation]:
    """Chips conserved (bought in minus cashed out is what the table holds), what clients were
    told went in and out is what the log says, no hand left in play, and the ledger equals the
    entries the log derives."""
    events = [(v, event_from_data(upcast(r))) for v, r in observed.log(table).items()]
    found: list[Violation] = []
    state = replay(e for _, e in events)
    book, entries = ledger.fold(events)
    if state.chips_on_table() != book.bought_in - book.cashed_out:
        found.append(
            (
                "chips",
                f"{table}: {state.chips_on_table()} chips on the table, bought in "
                f"minus cashed out is {book.bought_in - book.cashed_out}",
            )
        )
    told = _told(observed.records, table)
    if told is not None and told != book.bought_in - book.cashed_out:
        found.append(
            (
                "chips",
                f"{table}: clients were told {told} chips net went in, the log "
                f"says {book.bought_in - book.cashed_out}",
            )
        )
    if state.hand is not None:
        found.append(("hand", f"{table}: hand {state.hand.number} still in play at the end"))
    derived = [(e.tx_id, e.amount, e.balance_after, e.version) for e in entries]
    if table in observed.ledgers:
        paged = [
            (e["tx_id"], e["amount"], e["balance_after"], e["version"])
            for e in observed.ledgers[table]
        ]
        if paged != derived:
            first = next(
                (i for i, (a, b) in enumerate(zip(paged, derived, strict=False)) if a != b),
                min(len(paged), len(derived)),
            )
            found.append(
                (
                    "ledger",
                    f"{table}: the ledger ({len(paged)} entries) differs from the "
                    f"log's ({len(derived)}) from entry {first}",
                )
            )
    return found


def _told(records: list[Record], table: str) -> int | None:
    """Net chips in as the acknowledged answers said (None while an outcome is unknown)."""
    total = 0
    for record in records:
        if record.table != table:
            continue
        if record.status is None and record.command in ("seat", "top_up", "leave"):
            return None
        if not record.acknowledged:
            continue
        if record.command == "seat":
            total += int((record.body or {})["buy_in"])
        elif record.command == "top_up":
            total += int((record.body or {})["amount"])
        elif record.command == "leave":
            total -= int(record.answer["cash_out"])
    return total


def webhooks(observed: Observed, tables: Iterable[str]) -> list[Violation]:
    """Each webhook event of each table's log delivered under exactly one id, and nothing
    delivered that the log does not hold."""
    ids: dict[tuple[str, int, str], set[str]] = defaultdict(set)
    for webhook_id, body in observed.webhooks:
        data = body["data"]
        ids[(data["table_id"], int(data["version"]), body["type"])].add(webhook_id)
    expected: Counter[tuple[str, int, str]] = Counter()
    for table in tables:
        for version, record in observed.log(table).items():
            for name, _ in webhook_events(event_from_data(upcast(record))):
                expected[(table, version, name)] += 1
    found: list[Violation] = []
    for key in sorted(set(expected) | set(ids)):
        got, want = len(ids.get(key, ())), expected.get(key, 0)
        if got != want:
            what = "not delivered" if got < want else "delivered for no event / under two ids"
            found.append(("webhook", f"{key[0]}@{key[1]} {key[2]}: {what} ({got} ids, {want} due)"))
    return found


def deadline_lateness(observed: Observed, tables: Iterable[str]) -> list[float]:
    """Seconds past its hand's deadline at which each platform decision was made (the
    dispatchers acting on a deadline)."""
    late: list[float] = []
    for table in tables:
        deadline = ""
        for record in observed.log(table).values():
            data = record["data"]
            if record["type"] == "hand_dealt":
                deadline = data["deadline"]
            elif record["type"] == "decision_made" and data["by"] == "platform" and deadline:
                late.append(_seconds(data["at"]) - _seconds(deadline))
    return late


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def audits(observed: Observed) -> list[Violation]:
    return [
        ("audit", f"{table}: {result}")
        for table, result in sorted(observed.audits.items())
        if not (result and result.get("ok"))
    ]


def check(observed: Observed, tables: list[str]) -> tuple[list[Violation], dict[str, int]]:
    """Every check over every table; the violations and the counts (acknowledged, lost)."""
    found, counts = acknowledged_effects(observed)
    found += versions_monotonic(observed.records)
    found += [("archive-behind", f"{t}: {why}") for t, why in sorted(observed.behind.items())]
    for table in tables:
        found += chains_and_forks(observed, table)
        found += conservation_and_ledger(observed, table)
    found += webhooks(observed, tables)
    found += audits(observed)
    return found, counts
