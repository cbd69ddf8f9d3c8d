"""The two gunicorn classes ``guts serve`` substitutes for gunicorn's own, through its
public settings (``service.processes.gunicorn_conf``): a gevent worker that answers in problem+json
the
requests gunicorn refuses itself, and a logger that writes the service's JSON lines.

Both are written against gunicorn 27 (checked against 27.0.1; pinned to ``>=27.0,<28`` in
pyproject.toml); tests/test_operating.py checks them over a real ``guts serve``. What they use
of gunicorn beyond its documented settings is marked ``gunicorn internal`` below, each in one
place: the worker's ``handle_error`` method, the exceptions of ``gunicorn.http.errors`` it is
given, and the logger's ``setup`` method. (The answer is written with the socket's own
``sendall``, not gunicorn's ``util`` helpers; the loggers are found by the names gunicorn's
documentation gives them, ``gunicorn.error`` and ``gunicorn.access``.)

**The worker.** gunicorn parses a request before the app sees it, and answers one it cannot
take (a request line over ``limit_request_line``, too many or too long header fields, a
malformed request) with an HTML page of its own. The API promises problem+json for every
error, so ``guts serve`` runs this worker class (gunicorn's public ``worker_class`` setting
takes a subclass of its workers), which overrides the one method where a worker answers such
a request, ``handle_error``, and writes the problem itself, with gunicorn's own socket
helper. The status follows the refusal: 414 for the request line, 431 for the header fields
(both naming the limit), 501 for a transfer coding gunicorn does not know, 417 for an
``Expect`` it cannot meet, 400 for a malformed chunked body (saying what was wrong with it)
and anything else malformed, the status `service.processes.gunicorn_bodies` chose for a body it
refused
(400, 408, 413), 500 (logged with its traceback, as gunicorn does) for what is not the
client's fault.

**The logger.** gunicorn's ``logger_class`` setting takes a subclass of its logger; this one
lets gunicorn set up its handlers (stderr, a file, syslog, ``--access-logfile``) and gives each
the service's formatter (``service.logs.JsonLines``). (gunicorn's ``logconfig_dict`` could
do that too, but it turns gunicorn's access log on, a second line per request beside the
service's own access log, which costs about 14 us a request to format.)
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
import uuid
from typing import Any

from gunicorn.glogging import Logger  # type: ignore[import-untyped]

# gunicorn internal (checked against gunicorn 27.0.1): the exceptions its HTTP parser raises,
# which a worker's `handle_error` is given; `ProblemAnswers.refusal` maps them.
from gunicorn.http.errors import (  # type: ignore[import-untyped]
    ChunkMissingTerminator,
    ExpectationFailed,
    ForbiddenProxyRequest,
    InvalidChunkExtension,
    InvalidChunkSize,
    InvalidResponseHeader,
    InvalidResponseHeaderName,
    LimitRequestHeaders,
    LimitRequestLine,
    ParseException,
    UnsupportedTransferCoding,
)
from gunicorn.workers.ggevent import GeventWorker  # type: ignore[import-untyped]

from service.api.errors import PROBLEM, problem_body
from service.logs import JsonLines, RequestIds
from service.processes.gunicorn_bodies import BodyRefused


class JsonLogger(Logger):  # type: ignore[misc]
    """gunicorn's logger, writing the service's JSON lines (see the module doc)."""

    # gunicorn internal (checked against gunicorn 27.0.1): `setup(cfg)`, which gunicorn calls
    # on its logger class whenever it (re)makes its handlers.
    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for name in ("gunicorn.error", "gunicorn.access"):  # (its documented logger names)
            for handler in logging.getLogger(name).handlers:
                handler.setFormatter(JsonLines())
                handler.addFilter(RequestIds())


_SEND_S = 1.0
"""How long writing a refusal may wait for the client to take it (it is under 1 KB: it fits
in the socket's buffer unless the client has stopped reading)."""


def _linger(
    client: socket.socket, most: int = 1 << 20, wait_s: float = 1.0, most_s: float = 3.0
) -> None:
    """Close our side for writing, then read and drop what the client is still sending (at
    most `most` bytes, for at most `wait_s` between reads and `most_s` in all, so a client
    that trickles a body for ever does not keep the connection): closing a socket with unread
    input resets the connection, and the client would lose the answer before reading it."""
    client.shutdown(socket.SHUT_WR)
    client.settimeout(wait_s)
    drained, until = 0, time.monotonic() + most_s
    while drained < most and time.monotonic() < until:
        chunk = client.recv(65536)
        if not chunk:
            return
        drained += len(chunk)


class ProblemAnswers:
    """gunicorn's refusals in problem+json, for any of its worker classes (see the module
    doc)."""

    cfg: Any
    log: Any

    # gunicorn internal (checked against gunicorn 27.0.1): the worker method that answers a
    # request gunicorn refused, its signature, and that it is called with the client's socket
    # still open for writing.
    def handle_error(self, req: Any, client: socket.socket, addr: Any, exc: BaseException) -> None:
        refused = self.refusal(exc)
        # (the request was not read whole: a new id, in the answer and in the log line)
        request_id = uuid.uuid4().hex
        if refused is None:
            self.log.exception("Error handling request", extra={"request_id": request_id})
            status, title, detail = 500, "Internal Server Error", "the server failed"
        else:
            status, title, detail = refused
            self.log.warning(
                "request refused before the app: %d %s",
                status,
                title,
                extra={
                    "status": status,
                    "refusal": type(exc).__name__,
                    "request_id": request_id,
                },
            )
        body = problem_body(status, title, detail, request_id=request_id)
        head = (
            f"HTTP/1.1 {status} {title}\r\nConnection: close\r\nX-Request-Id: {request_id}\r\n"
            f"Content-Type: {PROBLEM}\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        try:
            client.settimeout(_SEND_S)  # (a client that reads nothing does not hold us)
            client.sendall(head.encode("latin-1") + body)
            _linger(client)
        except Exception:  # noqa: BLE001 - the client went away: nothing left to tell it
            self.log.debug("Failed to send error message.")

    def refusal(self, exc: BaseException) -> tuple[int, str, str] | None:
        """(status, title, detail) of a request gunicorn refused, or None when `exc` is not
        the client's fault. The details never echo the request (it is the client's own, but
        may be large)."""
        cfg = self.cfg
        if isinstance(exc, BodyRefused):  # service.processes.gunicorn_bodies
            return exc.status, exc.title, exc.detail
        for chunk_error, meaning in _CHUNKS.items():
            if isinstance(exc, chunk_error):
                return 400, "Bad Request", f"the body's chunked encoding is malformed: {meaning}"
        if isinstance(exc, InvalidResponseHeader | InvalidResponseHeaderName):
            return None  # a header the app sent
        if isinstance(exc, LimitRequestLine):
            limit = cfg.limit_request_line
            return (
                414,
                "URI Too Long",
                f"the request line is longer than the limit of {limit} bytes",
            )
        if isinstance(exc, LimitRequestHeaders):
            return (
                431,
                "Request Header Fields Too Large",
                f"the request has more than {cfg.limit_request_fields} header fields, or one "
                f"longer than the limit of {cfg.limit_request_field_size} bytes",
            )
        if isinstance(exc, UnsupportedTransferCoding):
            return 501, "Not Implemented", "the request's Transfer-Encoding is not supported"
        if isinstance(exc, ExpectationFailed):
            return 417, "Expectation Failed", "the request's Expect header cannot be met"
        if isinstance(exc, ForbiddenProxyRequest):
            return 403, "Forbidden", "the proxy protocol header is not allowed from this address"
        if isinstance(exc, ssl.SSLError):
            return 403, "Forbidden", "the TLS handshake failed"
        if isinstance(exc, ParseException):
            return 400, "Bad Request", f"the request is not valid HTTP ({type(exc).__name__})"
        return None


_CHUNKS = {
    InvalidChunkSize: "a chunk's size is not a hexadecimal number (or its line is too long)",
    InvalidChunkExtension: "a chunk extension is not valid",
    ChunkMissingTerminator: "a chunk does not end with CRLF, or the body has no last chunk",
}
"""What each of gunicorn's chunked-body refusals means, for the problem's detail."""


class ProblemGeventWorker(ProblemAnswers, GeventWorker):  # type: ignore[misc]
    """gunicorn's gevent worker (what ``guts serve`` runs: a request is a greenlet, so open
    live streams cost no process or thread), with its refusals in problem+json."""
