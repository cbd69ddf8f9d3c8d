"""After a failover that lost a suffix of a table's log (issue 31), the projections are
checked against the new master's log: a projection that applied events the log no longer
holds quarantines the table, so it is not played on into a history that diverges from the
ledger, the webhooks or the archive. (Found by the followers' next look at the table: a
command that reaches the table first, at the lost version, is not caught here.) The lost
suffix is made on a real Redis (`tests.failover`: the table's keys as the promoted replica
held them)."""

from __future__ import annotations

import pytest

from service.eventlog.due_index import DueIndex, QuarantineView
from service.eventlog.redis_store import RedisEventStore
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
