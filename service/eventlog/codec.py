"""Events and snapshots as versioned JSON bytes, with upcasting and a tamper-evident hash chain.

An event is stored as `{"type": ..., "v": ..., "data": {...}, "hash": ...}`, where `hash` is
SHA-256 over the previous event's hash (64 zeros before the first event) followed by the
event's canonical JSON (`type`, `v`, `data`, keys sorted, no spaces). Editing, dropping or
reordering any event breaks the chain from that event on. When an event class's
`VERSION` goes up, register a function that turns the previous version's `data` into the new
one (`@upcaster("hand_dealt", 1)`); reading then upcasts step by step, so a log written today
still replays after the event has changed shape.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from service.eventlog.store import StoreError
from service.rules.events import (
    EVENT_TYPES,
    Event,
    TableCreated,
    event_from_data,
    event_to_data,
)
from service.rules.state import TableState, evolve

Upcast = Callable[[dict[str, Any]], dict[str, Any]]
_UPCASTERS: dict[tuple[str, int], Upcast] = {}
SNAPSHOT_VERSION = 1


class CodecError(StoreError, ValueError):
    """Stored bytes that cannot be read as an event or a snapshot."""


def upcaster(event_type: str, from_version: int) -> Callable[[Upcast], Upcast]:
    """Register a function that upgrades `event_type`'s data from `from_version` by one."""

    def register(func: Upcast) -> Upcast:
        _UPCASTERS[(event_type, from_version)] = func
        return func

    return register


GENESIS = "0" * 64


def canonical(record: dict[str, Any]) -> bytes:
    """The bytes an event's hash covers: its type, version and data, keys sorted."""
    body = {"type": record["type"], "v": record["v"], "data": record["data"]}
    return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)


def chain_hash(previous: str, record: dict[str, Any]) -> str:
    """The hash of `record` following an event whose hash is `previous`."""
    return hashlib.sha256(previous.encode() + canonical(record)).hexdigest()


def encode_events(events: list[Event], head: str) -> tuple[list[bytes], str]:
    """The events as stored, chained after `head`; returns them and the new head."""
    encoded = []
    for event in events:
        record = event_to_data(event)
        head = record["hash"] = chain_hash(head, record)
        encoded.append(orjson.dumps(record))
    return encoded, head


def upcast(record: dict[str, Any]) -> dict[str, Any]:
    """Bring a stored record up to its event class's current version."""
    event_type, version = record.get("type"), record.get("v")
    cls = EVENT_TYPES.get(event_type)  # type: ignore[arg-type]
    if cls is None or not isinstance(version, int):
        raise CodecError(f"unknown event {event_type!r} v{version!r}")
    data = record["data"]
    while version < cls.VERSION:
        step = _UPCASTERS.get((cls.TYPE, version))
        if step is None:
            raise CodecError(f"no upcaster for {cls.TYPE} v{version}")
        data = step(data)
        version += 1
    if version != cls.VERSION:
        raise CodecError(f"{cls.TYPE} v{version} is newer than this code (v{cls.VERSION})")
    return {"type": cls.TYPE, "v": version, "data": data, "hash": record.get("hash")}


def decode_record(raw: bytes) -> dict[str, Any]:
    """The stored record, upcast, as plain data."""
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CodecError(f"not JSON: {exc}") from exc
    if not isinstance(record, dict):
        raise CodecError("an event must be a JSON object")
    return upcast(record)


def decode_following(raw: bytes, head: str) -> tuple[Event, str]:
    """The event stored as `raw`, checked to be the one that follows the event whose hash is
    `head` (its stored hash chains from `head`); returns it and its hash. CodecError if not."""
    try:
        record = orjson.loads(raw)
        if not isinstance(record, dict) or chain_hash(head, record) != record.get("hash"):
            raise CodecError("the event does not follow the given head")
        return event_from_data(upcast(record)), record["hash"]
    except (KeyError, TypeError, ValueError) as exc:  # CodecError and JSONDecodeError too
        raise CodecError(f"not the next event: {exc}") from exc


def check_chain(stored: Sequence[bytes], head: str) -> str:
    """Check that each of the `stored` events chains from the one before (the first from
    `head`), without decoding them into events; the last one's hash (CodecError if not)."""
    for raw in stored:
        try:
            record = orjson.loads(raw)
            linked = isinstance(record, dict) and chain_hash(head, record) == record.get("hash")
        except (KeyError, TypeError, ValueError) as exc:  # JSONDecodeError too
            raise CodecError(f"not an event: {exc}") from exc
        if not linked:
            raise CodecError("an event's hash does not chain from the event before it")
        head = record["hash"]
    return head


def stored_hash(raw: bytes) -> str:
    """The hash an event's stored record carries (the head its next event chains from)."""
    try:
        record = orjson.loads(raw)
        head = record["hash"] if isinstance(record, dict) else None
    except (KeyError, orjson.JSONDecodeError) as exc:
        raise CodecError(f"not an event: {exc}") from exc
    if not isinstance(head, str):
        raise CodecError("the event has no hash")
    return head


def decode_event(raw: bytes) -> Event:
    """The event from its stored bytes."""
    try:
        return event_from_data(decode_record(raw))
    except (KeyError, TypeError, ValueError) as exc:
        raise CodecError(f"malformed event: {exc}") from exc


def encode_snapshot(state: TableState, head: str) -> bytes:
    """The state, and the hash of the last event, as the store keeps them beside the log.

    orjson writes the dataclasses itself (int keys as strings, tuples as arrays): the same JSON
    as `state.to_data()`, about forty times faster."""
    record = {"v": SNAPSHOT_VERSION, "head": head, "state": state}
    return orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS)


def decode_snapshot(raw: bytes) -> tuple[TableState, str]:
    """The state and chain head from a snapshot written by `encode_snapshot`."""
    record = orjson.loads(raw)
    if record.get("v") != SNAPSHOT_VERSION:
        raise CodecError(f"snapshot version {record.get('v')!r} is not {SNAPSHOT_VERSION}")
    return TableState.from_data(record["state"]), record["head"]


def apply_following(state: TableState, head: str, stored: Sequence[bytes]) -> str:
    """Apply the `stored` events that follow `head` to `state`, in place; returns the new head
    (CodecError when one does not chain from the one before)."""
    for raw in stored:
        event, head = decode_following(raw, head)
        evolve(state, event)
    return head


def decode_current(snapshot: bytes, tail: Sequence[bytes]) -> tuple[TableState, str]:
    """The state and chain head from a snapshot and the stored events after it."""
    state, head = decode_snapshot(snapshot)
    return state, apply_following(state, head, tail)


@upcaster("hand_resolved", 1)
def _lone_winner_over_the_kitty(data: dict[str, Any]) -> dict[str, Any]:
    """v1 called a lone in-player's win over the kitty a tie ("all_tied", one winner: without
    a kitty one in-player is "uncontested", so only a kitty game wrote it); v2 says
    "beats_kitty"."""
    if data.get("outcome") == "all_tied" and len(data.get("winners") or ()) == 1:
        return {**data, "outcome": "beats_kitty"}
    return data


def tenant_of_first(data: bytes) -> str:
    """The tenant a table belongs to, from its first stored event alone (so that a log
    damaged further on still says whose it is; a log from before tenants: ``default``).
    CodecError when that event does not decode. The one place that reads it."""
    created = decode_event(data)
    return created.tenant if isinstance(created, TableCreated) else "default"
