"""Workers under test: real RQ workers on the test Redis."""

from __future__ import annotations

import pytest
from rq import SimpleWorker

from workers.queues import QUEUES, SERIALIZER


@pytest.fixture
def run_jobs(redis_client, database_url, monkeypatch):
    """Run every queued job now, in this process, with a real (burst) RQ worker, configured as
    the test servers are (the archive in the session's database)."""
    monkeypatch.setenv("GUTS_DATABASE_URL", database_url)

    def run() -> None:
        worker = SimpleWorker(list(QUEUES), connection=redis_client, serializer=SERIALIZER)
        worker.work(burst=True, logging_level="WARNING")

    return run
