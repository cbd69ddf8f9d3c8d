"""Request bodies under ``guts serve``: each is read whole, within a deadline, before the app
(and the admission gate, `service.api.admission`) sees the request, and one that is malformed,
truncated, too large or too slow is refused in problem+json by the worker, never a 500.

Why here and not in the app: gunicorn takes a chunked body apart only as the app reads it, so
a malformed one (a chunk size of ``zz`` or ``-1``, no CRLF after a chunk, a junk chunk
extension, the connection closed mid-chunk) raised gunicorn's own exceptions inside Flask,
which answered them 500; and a body that never ends held its greenlet for ever. Read here,
outside the app, gunicorn's exceptions reach the worker's ``handle_error``, where
`service.processes.gunicorn_overrides.ProblemAnswers.refusal` maps them, the one place for every
request gunicorn refuses, and the connection is closed (its framing can no longer be trusted).

`WholeBodies` (WSGI middleware, installed by ``service.processes.gunicorn_conf.post_worker_init``):
- a body with a Content-Length of at most the limit, or a chunked one, is read whole within
  ``GUTS_BODY_TIMEOUT_S`` (`Settings.body_timeout_s`, default 10 s: 64 KiB at 6.5 KB/s);
  one that has not ended by then is 408;
- a chunked body is refused as soon as a chunk's size says it is too large: 400 for a size
  beyond 63 bits (no body has one; a client sending one has lost its framing), 413 when the
  sizes so far add up to more than ``GUTS_MAX_BODY_BYTES`` (without waiting for the data);
- a body that ends before its Content-Length or its last chunk (the client closed its side)
  is 400;
- the app then reads the body from memory (``wsgi.input`` is a `io.BytesIO`), as it did.
A Content-Length over the limit is left to the app (413 before it reads anything).
What it costs: about 3 us per request with a body (timeit, in-process, 2026-11-26: mostly
starting and cancelling the gevent timer of the deadline), some 1% of the ~250 us of CPU a
declare takes (tests/bench/bench_request_plumbing.py).

The chunk sizes are seen through the one gunicorn internal this module uses: the reader of
a chunked body (``gunicorn.http.body.ChunkedReader``, behind ``wsgi.input.reader``) looks up
its ``parse_chunk_size`` method on itself for every chunk, so `_count_chunks` puts a checking
wrapper on that instance. Not for speed (style habit 17) but for correctness: gunicorn has
no setting that bounds a chunk's size. It was checked against gunicorn 27.0.1, gunicorn is
pinned to ``>=27.0,<28`` (pyproject.toml), and
tests/test_request_bodies.py checks every case above over a real ``guts serve``; against
another reader class (HTTP/2, a future gunicorn) the wrapper is left out and the sizes are
bounded by the deadline and the limit only.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

import gevent  # type: ignore[import-untyped]

# gunicorn internals (checked against gunicorn 27.0.1): its chunked body's reader, wrapped by
# `_count_chunks`, and what its readers raise when the connection closes mid-body.
from gunicorn.http.body import ChunkedReader  # type: ignore[import-untyped]
from gunicorn.http.errors import NoMoreData  # type: ignore[import-untyped]

WsgiApp = Callable[[dict[str, Any], Any], Iterable[bytes]]

LARGEST_CHUNK = (1 << 63) - 1
"""A chunk size beyond this is not a size (400), whatever the body limit."""
_IMPOSSIBLE = "the body's chunked encoding is malformed: a chunk's size is beyond 2^63 - 1 bytes"


class BodyRefused(Exception):
    """A request body refused before the app: its status, title and detail (problem+json,
    answered by the worker's ``handle_error``, the connection then closed)."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail = status, title, detail


def too_large(limit: int) -> BodyRefused:
    """The refusal of a body over `limit` bytes (the app's own words for it)."""
    detail = f"the body is larger than the limit of {limit} bytes"
    return BodyRefused(413, "Payload Too Large", detail)


class WholeBodies:
    """WSGI middleware: the request's body read whole, within `timeout_s`, before `wsgi_app`
    (see the module doc)."""

    def __init__(self, wsgi_app: WsgiApp, max_body_bytes: int, timeout_s: float) -> None:
        self.wsgi_app = wsgi_app
        self.limit = max_body_bytes
        self.timeout_s = timeout_s
        self.late = f"the body did not arrive within {timeout_s:g} s"

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        length = environ.get("CONTENT_LENGTH") or ""
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked or (length.isdigit() and 0 < int(length) <= self.limit):
            environ["wsgi.input"] = io.BytesIO(self._read(environ["wsgi.input"], length, chunked))
        return self.wsgi_app(environ, start_response)

    def _read(self, stream: Any, length: str, chunked: bool) -> bytes:
        deadline = gevent.Timeout(self.timeout_s)
        try:
            with deadline:
                if not chunked:
                    body: bytes = stream.read(int(length))
                    if len(body) < int(length):
                        raise NoMoreData(body)
                    return body
                _count_chunks(stream, self.limit)
                body = stream.read(self.limit + 1)
        except gevent.Timeout as expired:
            if expired is not deadline:
                raise  # another deadline's, not ours
            raise BodyRefused(408, "Request Timeout", self.late) from None
        except NoMoreData:
            raise BodyRefused(
                400, "Bad Request", "the body ended before it was complete (the connection closed)"
            ) from None
        if len(body) > self.limit:
            raise too_large(self.limit)
        return body


def _count_chunks(stream: Any, limit: int) -> None:
    """Refuse a chunked body as soon as a chunk's size is beyond `LARGEST_CHUNK` (400) or
    the sizes add up to more than `limit` (413), before its data is waited for.

    gunicorn internal (checked against gunicorn 27.0.1): ``wsgi.input.reader`` and the
    reader's ``parse_chunk_size(unreader, data) -> (size, rest)``, looked up per chunk."""
    reader: Any = getattr(stream, "reader", None)
    if type(reader) is not ChunkedReader:
        return
    parse = reader.parse_chunk_size
    declared = 0

    def checked(unreader: Any, data: bytes | None = None) -> tuple[int, bytes | None]:
        nonlocal declared
        size, rest = parse(unreader, data)
        if size > LARGEST_CHUNK:
            raise BodyRefused(400, "Bad Request", _IMPOSSIBLE)
        declared += size
        if declared > limit:
            raise too_large(limit)
        return size, rest

    reader.parse_chunk_size = checked
