"""What a process remembers of each table's latest snapshot, so that a command usually costs
one Redis round trip (the conditional append) instead of a load and an append.

Two layers, both only ever a hint: every append is conditional on the version the command was
decided on, so a stale or missing entry costs a retry, never a wrong decision.

- `SnapshotCache`, per process: the last version, snapshot and *decoded* state seen per table
  (an LRU). A command decides on a clone of the decoded state (`TableState.clone`), which is
  several times cheaper than decoding the snapshot again.
- `SharedSnapshots`, per machine: a fixed table of slots in anonymous shared memory, created by
  a parent before it forks its workers (`guts serve` does it in the gunicorn master). Without
  it, with N workers the worker that takes a table's next command is usually not the one that
  took the last, and its snapshot is behind: the append is refused and the command is decided
  again on the snapshot the refusal carries (two round trips). With it, every worker sees the
  newest snapshot any of them wrote.

A shared slot holds one table's snapshot, keyed by a digest of (namespace, table id) and
checked by a BLAKE2b digest of its contents: a slot that another process is writing, or that
two processes wrote at once, fails the check and reads as empty. Nothing in a slot is ever
executed or unpickled; it is the same JSON the store keeps, and it never leaves the machine.
"""

from __future__ import annotations

import hashlib
import mmap
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass

from service.eventlog.codec import GENESIS, decode_snapshot
from service.eventlog.store import Loaded
from service.rules.state import TableState


@dataclass
class Known:
    """A table's version and snapshot as this process last saw them. `state` is the snapshot
    decoded, when this process has it: it belongs to the cache and is never changed; commands
    work on clones of it."""

    version: int
    snapshot: bytes | None
    state: TableState | None = None
    head: str = GENESIS

    @classmethod
    def loaded(cls, loaded: Loaded) -> Known:
        return cls(loaded.version, loaded.snapshot)

    def working_state(self) -> tuple[TableState, str]:
        """A state the caller may change (a clone, or freshly decoded), and the chain head."""
        if self.state is not None:
            return self.state.clone(), self.head
        if self.snapshot is None:
            return TableState(), GENESIS
        return decode_snapshot(self.snapshot)


class SharedSnapshots:
    """Snapshots shared by processes forked after this object was made (see the module doc).

    Slot layout: key digest (16 bytes), version (u64), length (u32), content digest (16
    bytes), then the snapshot. Snapshots larger than a slot are not shared.
    """

    _HEADER = struct.Struct("<16sQI16s")

    def __init__(self, slots: int = 4096, slot_size: int = 8192) -> None:
        if slots < 1 or slot_size <= self._HEADER.size:
            raise ValueError("need at least one slot larger than the slot header")
        self.slots = slots
        self.slot_size = slot_size
        # Anonymous and MAP_SHARED (mmap's default): children forked later share the pages,
        # which are only backed by memory once written.
        self._map = mmap.mmap(-1, slots * slot_size)

    @staticmethod
    def key(namespace: str, table_id: str) -> bytes:
        """The 16-byte key of a table (namespace: which store it lives in)."""
        return hashlib.blake2b(f"{namespace}\0{table_id}".encode(), digest_size=16).digest()

    def _offset(self, key: bytes) -> int:
        return int.from_bytes(key[:8], "little") % self.slots * self.slot_size

    @staticmethod
    def _digest(key: bytes, version: int, snapshot: bytes) -> bytes:
        digest = hashlib.blake2b(key, digest_size=16)
        digest.update(version.to_bytes(8, "little"))
        digest.update(snapshot)
        return digest.digest()

    def get(self, key: bytes, newer_than: int = 0) -> Loaded | None:
        """The table's snapshot, when its slot holds one newer than `newer_than` and intact."""
        offset = self._offset(key)
        head = self._HEADER
        slot_key, version, length, digest = head.unpack_from(self._map, offset)
        if slot_key != key or version <= newer_than or length > self.slot_size - head.size:
            return None
        start = offset + head.size
        snapshot = self._map[start : start + length]
        if self._digest(key, version, snapshot) != digest:
            return None  # being written, or written by two processes at once
        return Loaded(version, snapshot)

    def put(self, key: bytes, version: int, snapshot: bytes) -> None:
        """Keep the table's snapshot at `version`, unless its slot already holds a newer one."""
        head = self._HEADER
        if len(snapshot) > self.slot_size - head.size:
            return
        offset = self._offset(key)
        slot_key, slot_version, _, _ = head.unpack_from(self._map, offset)
        if slot_key == key and slot_version >= version:
            return
        record = head.pack(key, version, len(snapshot), self._digest(key, version, snapshot))
        self._map[offset : offset + head.size + len(snapshot)] = record + snapshot


_shared: SharedSnapshots | None = None


def share_between_workers() -> SharedSnapshots:
    """Make (once) this process's shared snapshots; call it before forking the workers."""
    global _shared
    if _shared is None:
        _shared = SharedSnapshots()
    return _shared


def inherited() -> SharedSnapshots | None:
    """The shared snapshots this process made or inherited from its parent, if any."""
    return _shared


class SnapshotCache:
    """The last `Known` snapshot per table in this process (least recently used out), and,
    when given, the newer snapshots other processes left in `shared`."""

    def __init__(
        self, size: int = 4096, shared: SharedSnapshots | None = None, namespace: str = ""
    ) -> None:
        self.size = size
        self.shared = shared
        self.namespace = namespace
        self._entries: OrderedDict[str, Known] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, table_id: str) -> Known | None:
        with self._lock:
            local = self._entries.get(table_id)
            if local is not None:
                self._entries.move_to_end(table_id)
        if self.shared is not None:
            key = SharedSnapshots.key(self.namespace, table_id)
            newer = self.shared.get(key, newer_than=local.version if local is not None else 0)
            if newer is not None:
                return Known.loaded(newer)
        return local

    def put(self, table_id: str, known: Known) -> None:
        with self._lock:
            self._entries[table_id] = known  # a stale entry only costs one conflict
            self._entries.move_to_end(table_id)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        if self.shared is not None and known.snapshot is not None:
            key = SharedSnapshots.key(self.namespace, table_id)
            self.shared.put(key, known.version, known.snapshot)
