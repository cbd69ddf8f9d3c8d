"""After a failover that lost a suffix of a table's log (issue 31), the projections are
checked against the new master's log: a projection that applied events the log no longer
holds quarantines the table, so it is not played on into a history that diverges from the
ledger, the webhooks or the archive. (Found by the followers' next look at the table: a
command that reaches the table first, at the lost version, is not caught here.) The lost
suffix is made on a real Redis (`tests.failover`: the table's keys as the promoted replica
held them)."""

from __future__ import annotations

import pytest

from service.archive.archive import Archive
from service.eventlog.due_index import DueIndex, QuarantineView
from service.eventlog.redis_store import RedisEventStore
from service.infrastructure import archiver
from service.projections.follower import Follower
from service.projections.ledger import LedgerStore
from service.projections.webhooks import WebhookStore
from service.rules.decide import CreateTable, Deal, SeatPlayer
from service.rules.ruleset import resolve_ruleset
from service.tables import TableQuarantined, Tables
from tests.failover import Unreplicated


def test_projections_ahead_of_a_log_that_lost_a_suffix_quarantine_its_table(redis_client):
    redis_client.flushall()
    store = RedisEventStore(redis_client, prefix="lost")
    index = DueIndex(redis_client, prefix="lost")
    tables = Tables(store, index=index)
    rules = resolve_ruleset("three-card")
    for table_id in ("kept", "forked"):
        tables.execute(table_id, CreateTable(table_id, rules, b"s" * 32, "c"), create=True)
        for seat in range(3):
            tables.execute(table_id, SeatPlayer(f"p{seat}", 50))
    replica = Unreplicated(redis_client, store, "forked")
    tables.execute("forked", Deal(b"d" * 32))  # derived below, then lost
    follower = Follower(
        store,
        [LedgerStore(redis_client, prefix="lost"), WebhookStore(redis_client, prefix="lost")],
        index=index,
    )
    follower.sweep()
    replica.lose()
    tables.execute("kept", Deal(b"d" * 32))
    assert follower.sweep() > 0  # the other table goes on
    held = index.quarantined()
    assert list(held) == ["forked"]
    assert "a failover lost events already derived" in held["forked"]["reason"]
    served = Tables(store, index=index, held=QuarantineView(index))  # as the API serves
    with pytest.raises(TableQuarantined):
        served.load("forked")
    assert served.load("kept").hand is not None


def test_an_archive_holding_events_a_failover_lost_quarantines_its_table_though_the_log_regrew(
    redis_client, empty_archive
):
    """The archive applied a deal a failover then lost, and the table was played on past that
    version before the archiver looked again (so it is not ahead of the log, only different):
    the log's next events do not chain from what the archive holds, so the table is
    quarantined, and the archive neither takes them nor lets Redis trim them (never a silent
    fork). (With GUTS_REDIS_MIN_REPLICAS the archiver applies only what a replica holds, so
    this takes a failover that loses more than a replica lacked.)"""
    redis_client.flushall()
    archive = Archive.open(empty_archive, size=2)
    try:
        store = RedisEventStore(redis_client, prefix="lost", archive=archive, keep=2)
        index = DueIndex(redis_client, prefix="lost")
        tables = Tables(store, index=index)
        rules = resolve_ruleset("three-card")
        tables.execute("forked", CreateTable("forked", rules, b"s" * 32, "c"), create=True)
        for seat in range(3):
            tables.execute("forked", SeatPlayer(f"p{seat}", 50))
        replica = Unreplicated(redis_client, store, "forked")
        tables.execute("forked", Deal(b"d" * 32))  # archived below, then lost
        follower = Follower(store, [archiver(store, archive)], index=index, chained=False)
        follower.sweep()
        archived = archive.positions([("default", "forked")])[0]
        assert archived == store.load("forked").version
        replica.lose()
        regrown = Tables(store, index=index)  # (a process that never saw the lost deal)
        for seat in range(3, 6):
            regrown.execute("forked", SeatPlayer(f"p{seat}", 50))
        assert store.load("forked").version > archived
        follower.sweep()
        held = index.quarantined()
        assert list(held) == ["forked"]
        assert "cannot be archived" in held["forked"]["reason"], held
        assert archive.positions([("default", "forked")]) == [archived]
        assert redis_client.hget(store.meta_key("forked"), "trimmed") is None
        with pytest.raises(TableQuarantined):
            Tables(store, index=index, held=QuarantineView(index)).load("forked")
    finally:
        archive.close()
