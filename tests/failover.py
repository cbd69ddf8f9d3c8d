"""What a Redis failover that lost a suffix leaves, on a real Redis: `Unreplicated` keeps a
table's keys as a replica holds them (DUMP) before commands that never reach it, and `lose`
puts them back (RESTORE REPLACE), as the replica promoted in the master's place would have
them: the log without its last events, the meta hash (version, head, snapshot, due) before
them."""

from __future__ import annotations

import redis

from service.eventlog.redis_store import RedisEventStore


class Unreplicated:
    """The table's keys as of now; `lose` returns the table to them."""

    def __init__(self, client: redis.Redis, store: RedisEventStore, table_id: str) -> None:
        self.client = client
        self.keys = [store.events_key(table_id), store.meta_key(table_id)]
        self.dumps = [client.dump(key) for key in self.keys]
        self.records = store.idempotency_key(table_id, "*")
        self.kept = set(client.keys(self.records))

    def lose(self) -> None:
        """The events written since are lost (and the idempotency records written with
        them): the keys as they were."""
        for key in set(self.client.keys(self.records)) - self.kept:
            self.client.delete(key)
        for key, dumped in zip(self.keys, self.dumps, strict=True):
            if dumped is None:
                self.client.delete(key)
            else:
                self.client.restore(key, 0, dumped, replace=True)
