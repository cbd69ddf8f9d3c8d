"""Workers under test: real RQ workers on the test Redis."""

from __future__ import annotations

import pytest
from rq import SimpleWorker

from workers.queues import QUEUES, SERIALIZER


@pytest.fixture
def run_jobs(redis_client):
    """Run every queued job now, in this process, with a real (burst) RQ worker."""

    def run() -> None:
        worker = SimpleWorker(list(QUEUES), connection=redis_client, serializer=SERIALIZER)
        worker.work(burst=True, logging_level="WARNING")

    return run
