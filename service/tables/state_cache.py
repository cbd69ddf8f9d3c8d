"""What a process remembers of each table, so that a command usually costs one Redis round
trip (the conditional append) instead of a load and an append.

Two layers, both only ever a hint: every append is conditional on the version the command was
decided on, so a stale or missing entry costs a retry, never a wrong decision.

- `StateCache`, per process: the last version and *decoded* state seen per table (an LRU).
  A command takes the entry out, decides and applies its events on that state itself, and puts
  it back once they are stored: no decoding and no copy. A command that fails leaves nothing
  behind (its table's next command reads the snapshot).
- `SharedTails`, per machine: a fixed table of slots in anonymous shared memory, created by a
  parent before it forks its workers (`guts serve` does it in the gunicorn master), holding
  each table's latest stored events. Without it, with N workers the worker that takes a
  table's next command is usually not the one that took the last, and its state is behind:
  the append is refused and the command is decided again on the snapshot the refusal
  carries (two round trips). With it, a worker brings its own state up to date by applying
  the events its siblings stored since, which is also cheaper than decoding a snapshot.

A shared slot holds one table's latest events, as stored, in a small ring keyed by a digest of
(namespace, table id). Slots are written and read without locks: an event is applied only if
its stored hash chains from the state's own head (the log's hash chain, see
`service.eventlog.codec`), so a torn, overwritten or foreign entry is never applied, and
nothing but the table's next events can be. Nothing in a slot is executed or unpickled, and it
never leaves the machine.
"""

from __future__ import annotations

import functools
import hashlib
import mmap
import struct
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from service.eventlog.codec import GENESIS, CodecError, apply_following, decode_current
from service.eventlog.store import Loaded
from service.rules.state import TableState


@dataclass
class Known:
    """A table's version and snapshot as this process last saw them, and `state`, the snapshot
    decoded, when this process has it. A command takes its table's entry out of the cache
    (`StateCache.take`) and works on that state itself, so no copy is made; only the state
    of a command that was stored goes back in."""

    version: int
    snapshot: bytes | None
    state: TableState | None = None
    head: str = GENESIS
    tail: tuple[bytes, ...] = ()  # stored events after `snapshot`, when `state` is None

    @classmethod
    def loaded(cls, loaded: Loaded) -> Known:
        return cls(loaded.version, loaded.snapshot, tail=loaded.tail)

    @property
    def readable(self) -> bool:
        """Whether there is a state to work on (decoded, or a snapshot to decode)."""
        return self.state is not None or self.snapshot is not None

    def working_state(self) -> tuple[TableState, str]:
        """The state, for the caller to change (this entry's own, or freshly decoded with its
        tail applied: an entry a command works on is out of the cache), and the chain head.
        A tail that does not chain from its snapshot raises CodecError."""
        if self.state is not None:
            return self.state, self.head
        if self.snapshot is None:
            return TableState(), GENESIS
        return decode_current(self.snapshot, self.tail)

    def advanced(self, events: Sequence[bytes]) -> Known | None:
        """This state with the stored `events` (the next ones, in order) applied, in place;
        None when they do not chain from this state's head or cannot be read (this entry is
        then spoilt: drop it)."""
        state, head = self.working_state()
        try:
            head = apply_following(state, head, events)
        except (CodecError, KeyError, TypeError, ValueError):
            return None
        return Known(self.version + len(events), None, state, head)


class SharedTails:
    """The latest stored events of each table, shared by processes forked after this object
    was made (see the module doc).

    A table's slot is a header (key digest, 16 bytes; version of its newest event, u64) and
    a ring of `ring` cells; the event at version v sits in cell v % ring as its version
    (u64), length (u32) and bytes. Writers write their events' cells, then the header;
    nothing is read back or locked. A reader takes the cells it needs only if each still
    holds the version it wants; whatever it takes is then checked against the hash chain by
    `Known.advanced`, so a torn or overwritten cell can only make it ask Redis instead.
    """

    _HEADER = struct.Struct("<16sQ")
    _CELL = struct.Struct("<QI")

    def __init__(self, slots: int = 2048, ring: int = 16, cell_size: int = 2048) -> None:
        if slots < 1 or ring < 1 or cell_size <= self._CELL.size:
            raise ValueError("need at least one slot of at least one cell larger than its header")
        self.slots = slots
        self.ring = ring
        self.cell_size = cell_size
        self.slot_size = self._HEADER.size + ring * cell_size
        # Anonymous and MAP_SHARED (mmap's default): children forked later share the pages,
        # which are only backed by memory once written.
        self._map = mmap.mmap(-1, slots * self.slot_size)

    @staticmethod
    @functools.lru_cache(maxsize=8192)
    def key(namespace: str, table_id: str) -> bytes:
        """The 16-byte key of a table (namespace: which store it lives in)."""
        return hashlib.blake2b(f"{namespace}\0{table_id}".encode(), digest_size=16).digest()

    def _offset(self, key: bytes) -> int:
        return int.from_bytes(key[:8], "little") % self.slots * self.slot_size

    def _cell(self, offset: int, version: int) -> int:
        return offset + self._HEADER.size + version % self.ring * self.cell_size

    def since(self, key: bytes, version: int) -> list[bytes] | None:
        """The table's events after `version`: [] when the slot knows none newer, None when
        it knows newer ones but no longer holds them all (the caller then asks Redis)."""
        offset = self._offset(key)
        slot_key, newest = self._HEADER.unpack_from(self._map, offset)
        if slot_key != key or newest <= version:
            return []
        if newest - version > self.ring:
            return None
        events = []
        for wanted in range(version + 1, newest + 1):
            cell = self._cell(offset, wanted)
            held, length = self._CELL.unpack_from(self._map, cell)
            if held != wanted or length > self.cell_size - self._CELL.size:
                return None  # overwritten by a later event, or being written
            start = cell + self._CELL.size
            events.append(self._map[start : start + length])
        return events

    def put(self, key: bytes, version: int, events: Sequence[bytes]) -> None:
        """Keep the table's newly stored `events` (the last of them at `version`). A slot
        that holds another table's newer events is not taken; events too large for a cell
        stop the table being shared until its next small enough ones."""
        offset = self._offset(key)
        slot_key, newest = self._HEADER.unpack_from(self._map, offset)
        if slot_key == key and newest >= version:
            return
        room = self.cell_size - self._CELL.size
        if any(len(event) > room for event in events):
            self._map[offset : offset + self._HEADER.size] = bytes(self._HEADER.size)
            return
        first = version - len(events) + 1
        for number, event in enumerate(events, start=first):
            cell = self._cell(offset, number)
            self._map[cell : cell + self._CELL.size + len(event)] = (
                self._CELL.pack(number, len(event)) + event
            )
        self._map[offset : offset + self._HEADER.size] = self._HEADER.pack(key, version)


_shared: SharedTails | None = None


def share_between_workers() -> SharedTails:
    """Make (once) this process's shared tails; call it before forking the workers."""
    global _shared
    if _shared is None:
        _shared = SharedTails()
    return _shared


def inherited() -> SharedTails | None:
    """The shared tails this process made or inherited from its parent, if any."""
    return _shared


class StateCache:
    """The last `Known` state per table in this process (least recently used out), brought
    up to date, when given `shared`, with the events other processes stored since."""

    def __init__(
        self, size: int = 4096, shared: SharedTails | None = None, namespace: str = ""
    ) -> None:
        self.size = size
        self.shared = shared
        self.namespace = namespace
        self._entries: OrderedDict[str, Known] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, table_id: str) -> Known | None:
        """The table's entry, taken out of the cache for a command to work on (None when there
        is none, or when it is known to be behind and the events in between are gone: the
        caller then reads the current snapshot rather than decide on a stale state)."""
        with self._lock:
            local = self._entries.pop(table_id, None)
        if self.shared is None or local is None:
            return local
        events = self.shared.since(SharedTails.key(self.namespace, table_id), local.version)
        if events == []:
            return local
        return local.advanced(events) if events else None

    def put(self, table_id: str, known: Known, events: Sequence[bytes] = ()) -> None:
        """Remember `known`; `events` are the ones this process just stored to reach it."""
        with self._lock:
            self._entries[table_id] = known  # a stale entry only costs one conflict
            self._entries.move_to_end(table_id)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        if self.shared is not None and events:
            self.shared.put(SharedTails.key(self.namespace, table_id), known.version, events)
