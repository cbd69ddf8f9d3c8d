"""The service's log: one JSON object per line on stderr, for every process `guts serve` runs.

Each line is ``{"ts": "2026-11-23T20:33:11.123Z", "level": "info", "logger": "guts.serve",
"msg": "...", ...}``: the time in UTC with milliseconds, the level, the logger's name (the
source: ``guts.*``, ``gunicorn.error``, ``rq.worker``, ...), the message, then the record's
own fields (what the code passed as ``extra=``) and, for an exception, its traceback as one
string under ``exc``. One format, whoever logs: our code, gunicorn (through
``service.processes.gunicorn_conf``'s ``logconfig_dict``), RQ (which adds no handler of its own
when the
root logger has one), Python's warnings and uncaught exceptions.

Entry points call :func:`configure_logging` with the level they were given (``--log-level``
or ``GUTS_LOG_LEVEL``). The access log does not go through :mod:`logging` (it runs on every
request): it writes :func:`json_line` itself (``service.api.app.access_line``).

A line written while a request is handled carries its ``request_id`` (the ``X-Request-Id``
the API answers with): the API sets :data:`REQUEST_ID` for the request (a context variable:
its own for each thread or greenlet), and :class:`JsonLines` adds it to each record.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import re
import sys
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

import orjson

LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
"""The levels `--log-level` accepts, by name."""

_PLAIN = frozenset(
    [*logging.LogRecord("", 0, "", 0, "", None, None).__dict__, "message", "asctime", "taskName"]
)
"""Attributes every LogRecord has: anything else on a record is a field the caller passed."""
REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "guts_request_id", default=None
)
"""The id of the request being handled in this thread or greenlet (None: none)."""
_COLOURS = re.compile(r"\x1b\[[0-9;]*m")
"""Terminal colour codes (RQ colours some words when stdout is a terminal)."""


def iso_time(epoch: float) -> str:
    """`epoch` as ISO 8601 in UTC with milliseconds: ``2026-11-23T20:33:11.123Z``."""
    whole = int(epoch)
    millis = int((epoch - whole) * 1000)
    return f"{_second(whole)}.{millis:03d}Z"


@functools.lru_cache(maxsize=4)
def _second(whole: int) -> str:
    """The whole second `whole` as ISO 8601 in UTC (the lines of one second share it)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))


def json_line(
    epoch: float, level: str, logger: str, msg: str, fields: Mapping[str, Any] = {}
) -> bytes:
    """One log line (newline included): the common keys first, then `fields`."""
    entry = {"ts": iso_time(epoch), "level": level, "logger": logger, "msg": msg, **fields}
    return orjson.dumps(entry, default=str, option=orjson.OPT_NON_STR_KEYS) + b"\n"


class RequestIds(logging.Filter):
    """Stamps each record with the id of the request being handled (`REQUEST_ID`), if any,
    when it is logged (in the thread or greenlet of the request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = REQUEST_ID.get()
        if request_id is not None and not hasattr(record, "request_id"):
            record.request_id = request_id
        return True


class JsonLines(logging.Formatter):
    """Formats a record as one :func:`json_line` (without its newline)."""

    def format(self, record: logging.LogRecord) -> str:
        fields = {k: v for k, v in record.__dict__.items() if k not in _PLAIN}
        if record.exc_info:
            fields["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            fields["exc"] = record.exc_text
        if record.stack_info:
            fields["stack"] = record.stack_info
        msg = _COLOURS.sub("", record.getMessage())
        line = json_line(record.created, record.levelname.lower(), record.name, msg, fields)
        return line[:-1].decode()


class StderrLines(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler that writes :class:`JsonLines` to whatever ``sys.stderr`` is when a record
    comes (so a test that swaps stderr, or a closed capture, never breaks it)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JsonLines())
        self.addFilter(RequestIds())

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        """StreamHandler sets it; the property always answers sys.stderr."""


def configure_logging(level: str = "info") -> None:
    """Send every record at `level` or above to stderr as JSON lines (idempotent: the root
    logger gets one :class:`StderrLines`); Python's warnings and uncaught exceptions too."""
    root = logging.getLogger()
    if not any(isinstance(handler, StderrLines) for handler in root.handlers):
        root.addHandler(StderrLines())
    root.setLevel(LEVELS[level])
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught
    threading.excepthook = _log_uncaught_in_thread


def _log_uncaught(
    kind: type[BaseException], error: BaseException, traceback: TracebackType | None
) -> None:
    logging.getLogger("guts").critical(
        "uncaught %s", kind.__name__, exc_info=(kind, error, traceback)
    )


def _log_uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is None or args.exc_type is SystemExit:
        return
    logging.getLogger("guts").critical(
        "uncaught %s in thread %s",
        args.exc_type.__name__,
        args.thread.name if args.thread else "?",
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )


def fail(message: str, code: int = 1) -> int:
    """Log `message` as the error that ends the command; `code`."""
    logging.getLogger("guts").error(message)
    return code


def redact_url(url: str) -> str:
    """`url` with its password, if any, replaced by ``***`` (safe to print)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))
