"""A stop signal that lands where an exception is swallowed still stops the worker.

RQ stops an idle worker by raising from its signal handler, wherever the worker is. One CI run
had `guts worker`'s SIGTERM land while RQ was writing a log line: `logging` caught the
exception, printed "--- Logging error ---" and carried on, and the worker went on retrying a
Redis that was gone until it was killed 45 s later. Here a real worker (`build_worker`, as
`guts worker` runs it) on the suite's Redis sends itself SIGTERM from inside a log line, so
that the stop is swallowed every time; it must still end, with code 0, long before its
dequeue (45 s) would have returned.
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import logging, os, signal, sys
from redis import Redis
from workers.worker import build_worker

class SignalInTheMiddle(logging.StreamHandler):
    def format(self, record):
        if "cleaning registries" in record.getMessage() and not getattr(self, "sent", False):
            self.sent = True
            os.kill(os.getpid(), signal.SIGTERM)  # RQ's handler raises here, inside emit()
        return super().format(record)

logging.getLogger("rq.worker").addHandler(SignalInTheMiddle(sys.stderr))
worker = build_worker(Redis.from_url(sys.argv[1]))
worker.work(logging_level="INFO")
print("stopped", worker.stop_signalled)
"""


def test_a_stop_swallowed_by_a_log_line_still_stops_an_idle_worker(redis_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, redis_url], capture_output=True, text=True, timeout=20
    )
    assert done.returncode == 0, done.stderr
    assert "--- Logging error ---" in done.stderr  # the stop was swallowed where it landed
    assert "StopRequested" in done.stderr
    assert done.stdout.strip() == "stopped True"
