"""Keep-alive connections to the casinos' wallets: one POST over a connection kept from an
earlier call to the same origin when there is one, else over a new one.

A wallet-funded seat waits for its debit's answer, so a new connection per call (a TCP
handshake, a TLS one for https, a thread or a handler at the wallet for each) costs the seat
more than the call itself (docs/benchmarks.md, bench_wallet). A connection is kept only
after an answer read to its end that does not ask to close it, and reused only while it has
been idle less than `KEEP_IDLE_S` (under the idle timeouts servers commonly have, so a
wallet does not close it just as a call goes out) and the wallet has not closed it meanwhile
(nothing is readable on it). A call that fails in any way closes its connection: its answer
may still come, and must never be read as another call's. Nothing is ever sent twice here:
the caller decides what a failure means (for the wallet's calls, an unknown outcome).

A call ends within its timeout, whatever the other side does: the socket's timeout bounds each
read, not the call, so an answer sent a byte at a time (or one without end) would hold its
caller for as long as it dripped; the wallet duty's callers, held so, finished no other
tenant's transactions. A watcher shuts the call's socket down once the timeout has passed
(`service.projections.deadlines`), a host name is looked up for at most the timeout
(`_addresses`), and an answer's body longer than `MAX_ANSWER_BYTES` is not read (each: a
failed call). The webhooks' deliveries use the same client (`workers.jobs`).

A casino names the URLs the service calls, so no call goes to an address that is not public
(loopback, a private network, link-local such as a cloud's metadata service, ...) unless the
caller allows it (`GUTS_ALLOW_PRIVATE_URLS`, for wallets and receivers inside the operator's
own network): a new connection's host is resolved here, every address it resolves to is
checked, and the connection is made to a checked address (so a name that resolves elsewhere
by the time of the call is caught too, and cannot resolve again in between). A call to a host
at an address that is not public fails with `PrivateAddress` before any packet goes to it:
no TCP or TLS handshake, and the same failure whether anything listens there or not (so the
failures a tenant reads cannot map the operator's network).
"""

from __future__ import annotations

import http.client
import os
import select
import socket
import ssl
import sys
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from email.message import Message
from ipaddress import ip_address
from typing import Any
from urllib.parse import urlsplit

from service.projections.deadlines import WATCHER
from service.projections.webhook_messages import public

_POLL: Any = (
    select.poll
    if "gevent.monkey" not in sys.modules
    else sys.modules["gevent.monkey"].get_original("select", "poll")
)
"""`select.poll` as the system has it: where gevent patched the module (`guts serve`'s
workers patch it before anything of ours is imported), its poll does not look at a
descriptor without waiting for its loop."""

KEEP_IDLE_S = 1.0
"""How long an idle connection is kept for the next call (seconds)."""
KEEP_PER_ORIGIN = 16
"""How many idle connections are kept per origin (more are closed after their call)."""
MAX_ANSWER_BYTES = 64 * 1024
"""The longest answer body read (a wallet's answer is a few dozen bytes of JSON)."""

FAILURES = (OSError, http.client.HTTPException, ValueError)
"""What a call with no answer raises (see `Connections.post`): a timeout, a refused or dropped
connection, a host not at a public address, an answer that is not HTTP or is too long."""

Origin = tuple[str, str, int]
"""scheme, host, port."""


_Kept = tuple[str, str, int, bool]
"""An origin and whether calls there may reach a private address: idle connections by it."""


class PrivateAddress(OSError):
    """The URL's host is at an address that is not public, and calls there are not allowed
    (`GUTS_ALLOW_PRIVATE_URLS`): nothing was sent."""


class Connections:
    """Idle connections by origin, each with when it became idle. Safe to share between
    threads and greenlets: a connection is taken from its list (or made) by one caller and
    put back when its call is over; taking and putting are single list operations."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        """`tls`: the context of the https calls (None: the system's default, made with the
        first)."""
        self._idle: dict[_Kept, list[tuple[float, http.client.HTTPConnection]]] = {}
        self._tls = tls

    def post(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str],
        timeout_s: float,
        read: bool = True,
        private_ok: bool = False,
    ) -> tuple[int, Message, bytes]:
        """POST `body` to `url`, within `timeout_s` in all: the answer's status, headers and
        body (not read when not `read`: the connection is then closed). Raises OSError (a
        timeout, a refused or dropped connection, no whole answer within `timeout_s`; a host
        not at a public address, unless `private_ok`: PrivateAddress), HTTPException (an
        answer that is not HTTP) or ValueError (a URL that cannot be called, an answer body
        longer than `MAX_ANSWER_BYTES`)."""
        return self.send(url, body, headers, timeout_s, private_ok).answer(read)

    def send(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str],
        timeout_s: float,
        private_ok: bool = False,
    ) -> Posting:
        """`post` in two steps: the request is sent now, its answer read by `Posting.answer`
        (which the caller must call), so that the caller works while the other side answers.
        Raises as `post` does for what fails before the answer."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("not an http(s) URL")
        default = 443 if parts.scheme == "https" else 80
        origin = (parts.scheme, parts.hostname, parts.port or default)
        kept = (*origin, private_ok)  # (a connection checked for one policy serves only it)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection = self._take(kept, timeout_s) or self._new(origin, timeout_s)
        ticket, cut = WATCHER.watch(connection, timeout_s)
        posting = Posting(self, kept, connection, ticket, cut, timeout_s)
        try:
            if connection.sock is None:  # (new: connected here, within the call's deadline)
                tls = self._context() if parts.scheme == "https" else None
                _connect(connection, private_ok, tls)
            connection.request("POST", target, body, headers)
        except BaseException as error:
            posting.failed(error)
            raise
        return posting

    def close(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, {}
        for kept in idle.values():
            for _, connection in kept:
                connection.close()

    def _take(self, key: _Kept, timeout_s: float) -> http.client.HTTPConnection | None:
        kept = self._idle.get(key)
        now = time.monotonic()
        while kept:
            try:
                since, connection = kept.pop()
            except IndexError:  # (another caller took the last one)
                return None
            if now - since < KEEP_IDLE_S and connection.sock is not None:
                if not _readable(connection.sock.fileno()):
                    connection.sock.settimeout(timeout_s)
                    return connection
            connection.close()
        return None

    def keep(self, key: _Kept, connection: http.client.HTTPConnection) -> None:
        """Keep `connection`, idle, for the next call to its origin (`key`)."""
        kept = self._idle.setdefault(key, [])
        if len(kept) >= KEEP_PER_ORIGIN:
            connection.close()
            return
        kept.append((time.monotonic(), connection))

    def _new(self, origin: Origin, timeout_s: float) -> http.client.HTTPConnection:
        scheme, host, port = origin
        if scheme == "http":
            return http.client.HTTPConnection(host, port, timeout=timeout_s)
        return http.client.HTTPSConnection(host, port, timeout=timeout_s, context=self._context())

    def _context(self) -> ssl.SSLContext:
        """The TLS context of every https call (made with the first)."""
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    def _forget(self) -> None:
        """In a forked child: the parent's connections stay the parent's, the child's copies of
        their descriptors are closed (which ends nothing for the parent: a connection ends with
        its last descriptor, and closing a TLS socket sends no goodbye)."""
        self.close()


class Posting:
    """A POST sent on `connection` (kept by `connections` under `kept` once answered), its
    answer not read yet; watched until `timeout_s` has passed (`ticket`, `cut`)."""

    def __init__(
        self,
        connections: Connections,
        kept: _Kept,
        connection: http.client.HTTPConnection,
        ticket: int,
        cut: threading.Event,
        timeout_s: float,
    ) -> None:
        self.connections, self.kept, self.connection = connections, kept, connection
        self.ticket, self.cut, self.timeout_s = ticket, cut, timeout_s

    def answer(self, read: bool = True) -> tuple[int, Message, bytes]:
        """The answer's status, headers and body (see `Connections.post`); call it once."""
        connection = self.connection
        try:
            answer = connection.getresponse()
            data = answer.read(MAX_ANSWER_BYTES + 1) if read else b""
            if read and (len(data) > MAX_ANSWER_BYTES or not _ended(answer)):
                raise ValueError(f"an answer body longer than {MAX_ANSWER_BYTES} bytes")
        except BaseException as error:
            self.failed(error)
            raise
        WATCHER.done(self.ticket)
        if self.cut.is_set():  # (a body cut off reads as a short one)
            connection.close()
            raise self._timed_out()
        if answer.will_close or not read:
            connection.close()
        else:
            self.connections.keep(self.kept, connection)
        return answer.status, answer.headers, data

    def failed(self, error: BaseException) -> None:
        """The call failed (`error`): its connection is closed, never to be read again (its
        answer may still come); a TimeoutError is raised from `error` when the watcher cut it."""
        WATCHER.done(self.ticket)
        self.connection.close()
        if self.cut.is_set():
            raise self._timed_out() from error

    def _timed_out(self) -> TimeoutError:
        return TimeoutError(f"no whole answer within {self.timeout_s:g} s")


def _connect(
    connection: http.client.HTTPConnection, private_ok: bool, tls: ssl.SSLContext | None
) -> None:
    """Connect `connection` to an address of its host (for https, `tls` given: then shake
    hands). Unless `private_ok`, every address the host resolves to is checked first:
    PrivateAddress (nothing sent, not even a handshake) when one is not public."""
    sock = _socket(connection.host, connection.port, connection.timeout, private_ok)
    if tls is not None:
        try:
            sock = tls.wrap_socket(sock, server_hostname=connection.host)
        except BaseException:
            sock.close()
            raise
    connection.sock = sock


def _socket(host: str, port: int, timeout: float | None, private_ok: bool) -> socket.socket:
    """A TCP connection to `host`, made to one of the addresses it resolves to (tried in
    order, as `socket.create_connection` tries them); unless `private_ok`, once each of them
    is found public (PrivateAddress if one is not)."""
    started = time.monotonic()
    found = _addresses(host, port, timeout)
    if not private_ok and not all(public(str(address[0])) for *_, address in found):
        raise PrivateAddress(
            "the URL's host is not at a public address (GUTS_ALLOW_PRIVATE_URLS allows it)"
        )
    if timeout is not None:  # (the connect gets what the lookup left of the call's time)
        timeout -= time.monotonic() - started
        if timeout <= 0:
            raise TimeoutError("no connection within the call's timeout")
    failed = OSError(f"no address of {host} to connect to")
    for family, kind, proto, _, address in found:
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # (as http.client does)
            return sock
        except OSError as error:
            sock.close()
            failed = error
    raise failed


def _addresses(host: str, port: int, timeout: float | None) -> list[Any]:
    """`socket.getaddrinfo` of `host`, within `timeout`: the system's resolver cannot be
    interrupted, and a name server that does not answer held a call (and the wallet duty's
    calls of every tenant behind it) for as long as the resolver's own timeouts and attempts
    (resolv.conf's; 5 s and 2 attempts by default). A name is looked up in a thread of its
    own, left to end alone when the time is up (TimeoutError); an address needs no lookup."""
    try:
        ip_address(host)
    except ValueError:
        pass
    else:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: Future[list[Any]] = Future()

    def look_up() -> None:
        try:
            found.set_result(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except BaseException as error:  # (raised by `result`, when the caller still waits)
            found.set_exception(error)

    threading.Thread(target=look_up, name="http-lookup", daemon=True).start()
    try:
        return found.result(timeout)
    except FutureTimeout:
        raise TimeoutError(f"no address for the host within {timeout:g} s") from None


def _ended(answer: http.client.HTTPResponse) -> bool:
    """Whether `answer`'s body was read to its end (a chunked one's last chunk is read here)."""
    return answer.isclosed() or not answer.read(1)


def _readable(fd: int) -> bool:
    """Whether anything (an answer nobody asked for, or the end: the wallet closed it) waits
    on an idle connection: it cannot take a call."""
    poller = _POLL()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


CONNECTIONS = Connections()
"""This process's connections to the wallets."""
os.register_at_fork(after_in_child=CONNECTIONS._forget)
