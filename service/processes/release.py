"""`guts release`: release repaired tables from quarantine. Each is read in full first (as a
dispatcher's retry does), and stays quarantined, with what still does not parse, unless it
loads."""

from __future__ import annotations

from collections.abc import Sequence

import redis
from redis.exceptions import RedisClusterException

from service.config import Settings
from service.eventlog.due_index import DueIndex
from service.infrastructure import event_store, open_archive, store_client
from service.logs import fail, redact_url
from service.tables import Tables


def release(settings: Settings, table_ids: Sequence[str]) -> int:
    """Release each of `table_ids` that loads; 0 when all did (or were not quarantined), 1
    when one still does not load or Redis cannot be reached (a line says which)."""
    assert settings.redis_url is not None
    client = store_client(settings)
    archive = open_archive(settings, size=1)
    index = DueIndex(client, prefix=settings.key_prefix)
    tables = Tables(event_store(settings, client, archive), index=index)
    code = 0
    try:
        held = index.quarantined()
        for table_id in table_ids:
            if table_id not in held:
                print(f"{table_id}: not quarantined")
                continue
            try:
                tables.verify(table_id)
            except Exception as error:  # noqa: BLE001 - whatever still fails, it stays aside
                print(f"{table_id}: still does not load ({error}); left in quarantine")
                code = 1
                continue
            index.release(table_id)
            tables.reindex(table_id)  # its deadline, if any, is back in the index
            print(f"{table_id}: released")
    except (redis.RedisError, RedisClusterException) as error:
        where = redact_url(settings.redis_url)
        return fail(
            f"Redis at {where} cannot be reached ({error}); only the tables said released were"
        )
    finally:
        if archive is not None:
            archive.close()
        client.close()
    return code
