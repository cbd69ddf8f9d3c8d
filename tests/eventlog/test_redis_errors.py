"""What the event store makes of redis-py's errors (`service.eventlog.redis_errors`): a node
going away, or a failover or resharding under way, is StoreUnavailable (503), never an
unexpected error (500); an append that meets a master being demoted is unconfirmed."""

from __future__ import annotations

import pytest
import redis
from redis import exceptions

from service.eventlog.decoding import CorruptTable, parse_each
from service.eventlog.redis_errors import demoted, redis_away, store_error
from service.eventlog.store import StoreError, StoreRefusesWrites, StoreUnavailable

FAILING_OVER = [
    redis.ResponseError(
        "UNBLOCKED force unblock from blocking operation, instance state changed "
        "(master -> replica?)"
    ),
    exceptions.ReadOnlyError("You can't write against a read only replica."),
    exceptions.ClusterDownError("The cluster is down"),
    exceptions.MasterDownError("Link with MASTER is down and replica-serve-stale-data is no"),
    exceptions.TryAgainError("Multiple keys request during rehashing of slot"),
    exceptions.MovedError("3999 127.0.0.1:6381"),
    exceptions.AskError("3999 127.0.0.1:6381"),
    exceptions.SlotNotCoveredError("Command # 1 (EVALSHA) failed: no node for slot 3999"),
    redis.ResponseError("LOADING Redis is loading the dataset in memory"),
    redis.ResponseError(
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    ),
]


@pytest.mark.parametrize("error", FAILING_OVER, ids=lambda e: str(e).split()[0])
def test_a_failover_is_unavailable_and_an_append_meeting_it_unconfirmed(error):
    assert isinstance(store_error(error, "t", "stream"), StoreUnavailable)
    assert demoted(error)


@pytest.mark.parametrize(
    "error", [redis.ConnectionError("Connection reset by peer"), redis.TimeoutError("timed out")]
)
def test_unreachable_redis_is_unavailable_as_before(error):
    assert isinstance(store_error(error), StoreUnavailable)
    assert not demoted(error)  # an append that meets it: StoreUnavailable, as without replicas


REFUSING_WRITES = [
    exceptions.OutOfMemoryError("command not allowed when used memory > 'maxmemory'."),
    redis.ResponseError(
        "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to "
        "persist to disk."
    ),
]


@pytest.mark.parametrize("error", REFUSING_WRITES, ids=["OOM", "MISCONF"])
def test_a_redis_refusing_writes_is_unavailable_and_waited_out_not_unconfirmed(error):
    """Nothing was written (a script is refused at its first write): a 503, not an append of
    unknown outcome, and a loop waits it out (tests/api/test_redis_refusing_writes.py)."""
    assert isinstance(store_error(error, "t", "stream"), StoreRefusesWrites)
    assert redis_away(error) and not demoted(error)


def test_other_refusals_stay_errors():
    refused = store_error(redis.ResponseError("ERR wrong number of arguments"))
    assert type(refused) is StoreError
    assert not demoted(redis.ResponseError("ERR wrong number of arguments"))
    assert not redis_away(redis.ResponseError("ERR wrong number of arguments"))


def test_a_batch_reply_that_a_failover_broke_raises_and_quarantines_no_table():
    """A pipeline's per-table replies (``raise_on_error=False``): Redis refusing a key
    (WRONGTYPE) is that table's corruption; a connection refused mid-failover is not."""
    wrong = redis.ResponseError("WRONGTYPE Operation against a key holding the wrong kind")
    parsed = parse_each(["a", "b"], [wrong, [b"1"]], lambda t, r: r, "meta hash")
    assert isinstance(parsed[0], CorruptTable) and parsed[1] == [b"1"]
    refused = redis.ConnectionError("Error 111 connecting to 127.0.0.1:37415. Connection refused.")
    with pytest.raises(redis.ConnectionError):
        parse_each(["a", "b"], [[b"1"], refused], lambda t, r: r, "meta hash")
    with pytest.raises(exceptions.ClusterDownError):
        parse_each(["a"], [exceptions.ClusterDownError("down")], lambda t, r: r, "meta hash")


@pytest.mark.parametrize("bypass", [True, False], ids=["shortcut", "redis-py"])
def test_an_append_sent_to_a_replica_is_unavailable_not_a_corrupt_table(bypass):
    """A master demoted to a replica refuses the append's first write (READONLY). The script
    took any refused write of its events for a stream holding a later id, and so the table
    for corrupt (set aside until an operator repaired it): now the refusal is passed on."""
    from service.eventlog.redis_store import RedisEventStore
    from service.processes.redis_server import RedisServer

    with RedisServer() as master, RedisServer() as replica:
        client = redis.Redis.from_url(replica.url)
        client.replicaof("127.0.0.1", str(master.port))
        store = RedisEventStore(client, prefix="test", bypass_redis_py=bypass)
        with pytest.raises(StoreUnavailable) as raised:
            store.append("t1", 0, [b'{"type":"x"}'], b"{}")
        assert not isinstance(raised.value, CorruptTable), raised.value
        client.close()
