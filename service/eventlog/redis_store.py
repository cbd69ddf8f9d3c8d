"""The event store on Redis: one stream per table, one Lua script per append.

Key layout (``P`` is the prefix, default ``guts``; ``T`` the encoded table id, below)::

    P:{T}:events      stream   the log; entry id "<version>-0", one field "data" = event bytes
    P:{T}:meta        hash     "version" (decimal), "snapshot" (bytes), "snapshot_version"
                               (the version the snapshot is of; absent: "version"), "due"
                               (the table's next due moment, epoch seconds; absent: none),
                               "trimmed" (the stream starts after it; absent: 0) and "head"
                               (the hash of the last event, when its append gave it: an
                               append is refused unless it chains from it, `store.Chain`)
    P:{T}:idem:<key>  hash     "request_hash", "response"; expires after idempotency_ttl_s
    P:{T}:quota:<c>   list     a rate-limit counter (`store.Quota`): the times (ms) of the
                               last requests admitted, newest first; expires with its window

Stream ids encode the version: the event at 1-based position ``n`` has id ``n-0``, so
``read(after=n)`` is ``XRANGE P:{T}:events n+1 +`` and versions come back from the ids.
(The ids' millisecond part is therefore *not* a time.) The version itself is kept in the
meta hash and never derived from ``XLEN``; the append script (``lua/append.lua``) refuses to
write when the stream does not end at ``<version>-0`` (its length plus "trimmed" differs from
the version, or it holds a later id: :class:`CorruptLog`).

Streams are trimmed only of events the archive holds (``trim``, called by the archive once it
has copied and verified them: ``service.archive``), never past the snapshot nor the latest
``keep`` events; ``read`` takes the events a stream no longer holds from the archive, so
readers see one log.

Every key of a table carries the hash tag ``{T}``, so a table lives in one Redis Cluster slot,
where the append script touches only its table's keys (on one Redis it may also record the
due in the due index: ``index_due_with``). ``T`` is the table id
percent-encoded (RFC 3986 unreserved characters kept), so ids with ``{``, ``}``, ``:`` or
spaces cannot bleed into the key structure: ``t-1`` is stored as ``guts:{t-1}:...``, ``a}b``
as ``guts:{a%7Db}:...`` (and ``""`` as ``guts:{%}:...``). There is no global key: the list of
tables is found by scanning for meta hashes, and the index of due tables has its own
(``service.eventlog.due_index``).

Loads and appends, the commands every table command makes, go through redis-py's
``execute_command``, or (``bypass_redis_py``, the default) over one connection per thread
around redis-py's pool, retry and script wrappers (``redis_py_bypass``: measured worth it).
Other commands use the client. Either way a command is retried after a connection error or
timeout. Appends are safe to
retry because they are conditional: a retried append that had in fact been applied
answers with a replay (when an idempotency key was given) or a :class:`VersionConflict`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, unquote

import redis
from redis.cluster import RedisCluster

from service.eventlog.append_args import append_call
from service.eventlog.append_reply import append_outcome
from service.eventlog.decoding import (
    META_FIELDS,
    CorruptTable,
    count,
    due,
    idempotency,
    member_text,
    meta,
    parse_each,
    stored_events,
    version_of_id,
)
from service.eventlog.redis_errors import (
    REDIS_ERRORS,
    bytes_of,
    demoted,
    redis_errors,
    scan_keys,
    store_error,
    table_errors,
)
from service.eventlog.redis_py_bypass import direct_commands
from service.eventlog.replication import Replicated, pipelined
from service.eventlog.store import (
    AppendResult,
    Chain,
    Due,
    Idempotency,
    Loaded,
    NotReplicated,
    OverLimit,
    Quota,
    StoredEvent,
    StoreError,
    check_append_args,
    check_read_args,
)

__all__ = ["ArchiveReader", "RedisEventStore", "table_key_tag"]

_LUA = Path(__file__).parent / "lua"
_QUOTA_LUA = (_LUA / "quota.lua").read_text()
_DUE_RECORDS_LUA = (_LUA / "due_records.lua").read_text()
_APPEND_LUA = _QUOTA_LUA + _DUE_RECORDS_LUA + (_LUA / "append.lua").read_text()
_QUOTA_ONLY_LUA = _QUOTA_LUA + (_LUA / "quota_only.lua").read_text()
_TRIM_LUA = (_LUA / "trim.lua").read_text()
_IDEMPOTENT_LUA = (_LUA / "idempotent.lua").read_text()


class ArchiveReader(Protocol):
    """Where the events trimmed from Redis are (``service.archive.Archive``)."""

    def read(self, table_id: str, after: int, upto: int, limit: int | None) -> list[StoredEvent]:
        """The events after `after` up to `upto`, oldest first, at most `limit`."""
        ...


@functools.lru_cache(maxsize=8192)
def table_key_tag(table_id: str) -> str:
    """The hash-tag body for ``table_id``: percent-encoded, never containing ``{}:``.

    The empty id becomes ``%`` (no percent-encoding produces a lone ``%``), because Redis
    ignores an empty hash tag ``{}`` and would scatter the table's keys over slots.
    """
    return quote(table_id, safe="") or "%"


class RedisEventStore:
    """:class:`~service.eventlog.store.EventStore` on Redis streams (see the module doc).

    ``client`` must return bytes (``decode_responses=False``). ``prefix`` namespaces every
    key, so tests and tenants can share a Redis. Idempotency records expire after
    ``idempotency_ttl_s`` seconds.
    """

    def __init__(
        self,
        client: redis.Redis,
        prefix: str = "guts",
        idempotency_ttl_s: int = 86_400,
        *,
        bypass_redis_py: bool = True,
        archive: ArchiveReader | None = None,
        keep: int = 100,
        min_replicas: int = 0,
        replica_timeout_ms: int = 200,
    ) -> None:
        if client.get_connection_kwargs().get("decode_responses"):
            raise ValueError("RedisEventStore needs a client with decode_responses=False")
        if not prefix or "{" in prefix or "}" in prefix:
            raise ValueError(f"prefix must be non-empty and brace-free, not {prefix!r}")
        if idempotency_ttl_s <= 0:
            raise ValueError("idempotency_ttl_s must be positive")
        self.client = client
        self.prefix = prefix
        self.idempotency_ttl_s = idempotency_ttl_s
        self.archive = archive
        self.keep = keep
        """How many of a table's latest events a trim leaves in Redis in any case."""
        self.min_replicas = min_replicas
        """How many replicas must confirm an append (``WAIT``, within `replica_timeout_ms`)
        before it counts as made (0: none asked; `service.eventlog.replication`);
        unconfirmed: NotReplicated."""
        self.notices = f"{prefix}:appended"
        """The channel each append publishes its notice on (``<version> <table id>``), which
        the live feeds listen to (`service.api.feed`)."""
        # register_script hashes locally; the script is sent once (SCRIPT LOAD) on the first
        # NOSCRIPT reply and called by EVALSHA from then on.
        self._append_script = client.register_script(_APPEND_LUA)
        self._trim_script = client.register_script(_TRIM_LUA)
        self._idempotent_script = client.register_script(_IDEMPOTENT_LUA)
        self._quota_script = client.register_script(_QUOTA_ONLY_LUA)
        # The hot commands (a load's HMGET, an append's EVALSHA) go through redis-py's
        # public `execute_command`, or around its pool (measured worth it: see the module).
        direct = direct_commands(client) if bypass_redis_py else None
        self._call = client.execute_command if direct is None else direct.call
        many = pipelined(client) if direct is None else direct.call_many
        self.replication = Replicated(client, self._call, many, min_replicas, replica_timeout_ms)
        self.commands = Replicated(client, self._call, many)
        self.due_keys: list[bytes] | None = None
        """The due index's keys, when the append records a due there too (`index_due_with`)."""
        """The same path (the shortcut, when on) for what other stores on this client send on
        a request's path and need no replica to confirm: the due index's record, the loss
        limits' read (`service.infrastructure.build_table_service` hands it to them)."""

    # -- keys --------------------------------------------------------------------------

    def _table_prefix(self, table_id: str) -> bytes:
        return f"{self.prefix}:{{{table_key_tag(table_id)}}}:".encode()

    def events_key(self, table_id: str) -> bytes:
        """The stream holding the table's log."""
        return self._table_prefix(table_id) + b"events"

    def meta_key(self, table_id: str) -> bytes:
        """The hash holding the table's version and snapshot."""
        return self._table_prefix(table_id) + b"meta"

    def idempotency_key(self, table_id: str, key: str) -> bytes:
        """The hash holding one idempotency record of the table."""
        return self._table_prefix(table_id) + b"idem:" + key.encode()

    def counter_key(self, table_id: str, counter: str) -> bytes:
        """The list of one of the table's counters (an `Quota`'s)."""
        return self._table_prefix(table_id) + b"quota:" + counter.encode()

    # -- EventStore --------------------------------------------------------------------

    def load(self, table_id: str) -> Loaded:
        """The table's version and snapshot in one HMGET (0 and None if unknown), and, when
        the snapshot is older than the table, its tail in an XRANGE up to that version. Every
        meta field is parsed (`decoding.meta`): one that does not raises CorruptTable."""
        with table_errors(table_id, "meta hash"):
            fields = self._call("HMGET", self.meta_key(table_id), *META_FIELDS)
        parsed = meta(table_id, fields)
        if parsed.version == 0:
            return Loaded(version=0, snapshot=None)
        current, since = parsed.version, parsed.snapshot_version
        tail = self.read(table_id, since, current - since) if since < current else []
        if len(tail) != current - since:  # the stream ends before the stored version
            raise CorruptTable(
                table_id, "stream", f"it holds {since + len(tail)} events, not {current}"
            )
        return Loaded(current, parsed.snapshot, tuple(stored.data for stored in tail))

    def append(
        self,
        table_id: str,
        expected_version: int,
        events: Sequence[bytes],
        snapshot: bytes | None,
        idempotency: Idempotency | None = None,
        due: float | None = None,
        chain: Chain | None = None,
        quota: Quota | None = None,
        index_due: bool = False,
    ) -> AppendResult:
        """See :meth:`EventStore.append`: one EVALSHA of the append script (which records the
        due in the due index too when asked and `index_due_with` was given the index)."""
        check_append_args(expected_version, events, snapshot, due)
        indexed = index_due and self.due_keys is not None
        keys, args = append_call(
            self,
            table_id,
            expected_version,
            events,
            snapshot,
            idempotency,
            due,
            chain,
            quota,
            indexed,
        )
        try:  # (inline rather than `with redis_errors()`: this runs on every command)
            reply, acked = self.replication.run(self._append_script, keys, args)
        except REDIS_ERRORS as error:
            if self.min_replicas and demoted(error):  # the script may have run: unconfirmed
                made = expected_version + len(events)
                raise NotReplicated(table_id, made, None, self.min_replicas) from error
            raise store_error(error, table_id, "meta hash or stream") from error
        appended = append_outcome(table_id, reply, expected_version, idempotency, quota, indexed)
        self.replication.check(table_id, appended.version, acked)
        return appended

    def index_due_with(self, record_keys: Sequence[str]) -> None:
        """Record a due asked to be indexed (``append(index_due=True)``) with the events, in
        the due index of `record_keys` (`DueIndex.record_keys`): one round trip for both,
        where they are two. Only where the index and the tables share one Redis: on a
        cluster the index's slot is never a table's, and a script may touch one slot."""
        if isinstance(self.client, RedisCluster):
            raise ValueError("a cluster's append cannot record in the due index's slot")
        self.due_keys = [key.encode() for key in record_keys]

    def count_request(self, table_id: str, quota: Quota) -> None:
        """See :meth:`EventStore.count_request`: one EVALSHA (no ``WAIT``: a counter lost in a
        failover only admits a few more)."""
        key = self.counter_key(table_id, quota.counter)
        with redis_errors():
            wait = self._quota_script(keys=[key], args=[quota.limit, quota.window_ms])
        quota.counted = True
        if int(wait):
            raise OverLimit(table_id, quota.counter, int(wait))

    def read(self, table_id: str, after: int = 0, limit: int | None = None) -> list[StoredEvent]:
        """Events with version > ``after`` (``XRANGE <after+1> + COUNT <limit>``); those
        trimmed from the stream come from the archive (then the read may return fewer than
        `limit`, never none while there are more)."""
        check_read_args(after, limit)
        if limit == 0:
            return []
        with table_errors(table_id, "stream"):
            entries = self.client.xrange(self.events_key(table_id), after + 1, "+", count=limit)
        entries = entries or []
        if entries and version_of_id(entries[0][0]) == after + 1:
            return self._stored(table_id, after, entries)
        trimmed = self.trimmed(table_id)
        if trimmed <= after:  # nothing this read needs was trimmed: the entries are all
            return self._stored(table_id, after, entries)
        if self.archive is None:
            raise StoreError(
                f"table {table_id!r}: events up to {trimmed} are archived, and this store was "
                "given no archive to read them from"
            )
        archived = self.archive.read(table_id, after, trimmed, limit)
        if limit is not None and len(archived) == limit:
            return archived
        # The entries read before the trim was looked at start at or before trimmed + 1.
        rest = [entry for entry in entries if (version_of_id(entry[0]) or 0) > trimmed]
        return (
            archived
            + self._stored(table_id, trimmed, rest)[
                : None if limit is None else limit - len(archived)
            ]
        )

    @staticmethod
    def _stored(table_id: str, after: int, entries: list[Any]) -> list[StoredEvent]:
        """The stream's `entries` as the events after `after` (CorruptTable if not those)."""
        return stored_events(table_id, after, entries)

    def trimmed(self, table_id: str) -> int:
        """The version the table's stream starts after (0: nothing trimmed)."""
        with table_errors(table_id, "meta hash"):
            raw = self.client.hget(self.meta_key(table_id), "trimmed")
        return 0 if raw is None else count(table_id, "meta field trimmed", raw)

    def stream_entries(
        self, table_id: str, start: bytes, limit: int
    ) -> list[tuple[bytes, bytes | None]]:
        """The stream's entries from id `start` on (``(<id>``: after it), at most `limit`, as
        stored: each id and its "data" field (None when absent), neither checked. For audits,
        which name what is wrong with a log rather than fail to read it."""
        with redis_errors():
            entries = self.client.xrange(self.events_key(table_id), start, "+", count=limit)
        found: list[tuple[bytes, bytes | None]] = []
        for entry_id, fields in entries or []:
            data = (fields or {}).get(b"data")
            found.append((bytes_of(entry_id), None if data is None else bytes_of(data)))
        return found

    def trim(self, table_id: str, archived: int) -> int:
        """Drop from the table's stream the events up to `archived` (which the archive holds
        and has verified), except the snapshot's tail and the latest `keep`; the version the
        stream now starts after."""
        with table_errors(table_id, "meta hash or stream"):
            trimmed = int(
                self._trim_script(
                    keys=[self.events_key(table_id), self.meta_key(table_id)],
                    args=[archived, self.keep],
                )
            )
        if trimmed < 0:
            raise CorruptTable(table_id, "meta hash", "a version field is not a count")
        return trimmed

    def find_idempotent(self, table_id: str, key: str) -> Idempotency | None:
        """The live idempotency record for ``key``, if any (one HMGET); with `min_replicas`,
        only once replicas hold it (a script that writes it again, then ``WAIT``:
        NotReplicated if they do not confirm it)."""
        record_key = self.idempotency_key(table_id, key)
        with table_errors(table_id, f"idempotency record {key!r}"):
            if not self.min_replicas:
                request_hash, response = self.client.hmget(record_key, "request_hash", "response")
            else:
                found, acked = self.replication.run(self._idempotent_script, [record_key], [])
                request_hash, response = found
                if request_hash is not None:
                    self.replication.check(table_id, 0, acked)
        if request_hash is None and response is None:
            return None
        return idempotency(table_id, key, request_hash, response)

    def table_ids(self) -> list[str]:
        """Every table ever created, sorted: a SCAN for the tables' meta hashes (it reads
        the whole keyspace, so it is for tools and the due index's repair, not for requests)."""
        pattern = f"{self.prefix}:{{*}}:meta".encode()
        found = []
        with redis_errors():
            for key in scan_keys(self.client, pattern):
                tag = member_text(bytes_of(key)[len(self.prefix) + 2 : -len(b"}:meta")])
                if tag is not None and "}" not in tag:  # (not an idempotency record's key)
                    found.append(unquote(tag) if tag != "%" else "")
        return sorted(set(found))

    def dues(self, table_ids: Sequence[str]) -> list[Due | CorruptTable]:
        """Each table's version and due moment: one HMGET per table, in one pipeline, each
        parsed on its own (a table whose fields do not parse is its CorruptTable)."""
        if not table_ids:
            return []
        with redis_errors(), self.client.pipeline(transaction=False) as pipe:
            for table_id in table_ids:
                pipe.hmget(self.meta_key(table_id), "version", "due")
            replies = pipe.execute(raise_on_error=False)
            return parse_each(table_ids, replies, _due_of, "meta hash")


def _due_of(table_id: str, reply: list[object]) -> Due:
    raw_version, raw_due = reply
    if raw_version is None:
        return (0, None)
    return (count(table_id, "meta field version", raw_version), due(table_id, raw_due))
