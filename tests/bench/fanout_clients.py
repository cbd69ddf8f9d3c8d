"""The subscribers of ``bench_fanout``: SSE clients on raw asyncio sockets, several processes of
them, each driven over a pipe by the benchmark (open these streams, close them all and say what
you received).

A subscriber parses only what it needs of each message: its ``id:`` (the event's version: a
version other than the one after the last is counted as out of order) and the event's ``at``
(the server's clock when the command was decided, milliseconds), so its delivery time is the
receipt's time minus ``at``, on the same machine's clock. Nothing is parsed as JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time
from dataclasses import dataclass, field
from datetime import datetime
from multiprocessing.connection import Connection

OPENING_AT_ONCE = 64
"""Connections one client process has in the middle of opening at once (the server's listen
backlog is not flooded)."""
OPEN_WITHIN_S = 300.0
"""How long the streams of one order may take to open."""


@dataclass
class Received:
    """What one subscriber got: from `after`, `count` events, the last `last`, `disorder` of
    them not the one after the one before."""

    table: str
    after: int
    count: int = 0
    last: int = 0
    disorder: int = 0
    refused: str | None = None
    opened: bool = False
    delays_ms: list[float] = field(default_factory=list)


def _at_seconds(data: bytes) -> float | None:
    """The event's ``at`` (epoch seconds) from an SSE ``data:`` line, without parsing JSON."""
    start = data.find(b'"at":"')
    if start < 0:
        return None
    text = data[start + 6 : start + 30].decode()
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def _subscribe(
    host: str, port: int, key: str, got: Received, opening: asyncio.Semaphore
) -> None:
    async with opening:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(
            f"GET /v1/tables/{got.table}/stream?after={got.after} HTTP/1.1\r\n"
            f"Host: bench\r\nAuthorization: Bearer {key}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        status = await reader.readline()
        if b" 200 " not in status:
            got.refused = (status + await reader.read(2000)).decode(errors="replace")
            writer.close()
            return
        while (await reader.readline()).strip():  # the headers
            pass
        got.last, got.opened = got.after, True
    try:
        while line := await reader.readline():
            if line.startswith(b"id: "):
                version = int(line[4:])
                got.disorder += version != got.last + 1
                got.count, got.last = got.count + 1, version
            elif line.startswith(b"data: "):
                at = _at_seconds(line)
                if at is not None:
                    got.delays_ms.append((time.time() - at) * 1000)
    finally:
        writer.close()


def _raise_open_files() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def run(pipe: Connection, host: str, port: int, key: str) -> None:
    """A client process: serves the benchmark's orders on `pipe` until told to exit."""
    _raise_open_files()
    asyncio.run(_serve_orders(pipe, host, port, key))


async def _serve_orders(pipe: Connection, host: str, port: int, key: str) -> None:
    loop = asyncio.get_running_loop()
    opening = asyncio.Semaphore(OPENING_AT_ONCE)
    tasks: list[asyncio.Task[None]] = []
    received: list[Received] = []
    while True:
        order, argument = await loop.run_in_executor(None, pipe.recv)
        if order == "open":  # argument: [(table, after)]
            received = [Received(table, after) for table, after in argument]
            tasks = [
                asyncio.create_task(_subscribe(host, port, key, got, opening)) for got in received
            ]
            deadline = time.monotonic() + OPEN_WITHIN_S
            while any(not got.opened and got.refused is None for got in received):
                if time.monotonic() > deadline or any(
                    task.done() and task.exception() for task in tasks
                ):
                    break
                await asyncio.sleep(0.1)
            failed = [repr(t.exception()) for t in tasks if t.done() and t.exception()]
            refused = [got.refused for got in received if got.refused is not None]
            late = sum(not got.opened and got.refused is None for got in received)
            pipe.send((failed + [f"{late} not open in {OPEN_WITHIN_S:g} s"] * bool(late), refused))
        elif order == "close":
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(BaseException):
                    await task
            pipe.send(received)
        else:
            return
