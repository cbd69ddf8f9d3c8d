"""A small Server-Sent Events client for the tests: reads a stream over real HTTP and parses
its messages and comments as they come."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import requests


@dataclass
class Message:
    """One SSE message (`id`, `event`, `data` parsed as JSON) or comment (`comment`)."""

    id: int | None = None
    event: str | None = None
    data: Any = None
    comment: str | None = None


@dataclass
class Stream:
    """An open stream. `next()` is the next message or comment, waiting up to the read
    timeout; `events_until(version)` the event messages up to that version."""

    response: requests.Response
    _chunks: Any = None
    _buffer: bytes = b""
    received: list[Message] = field(default_factory=list)

    @classmethod
    def open(
        cls,
        base: str,
        path: str,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        read_timeout: float = 20.0,
        **params: Any,
    ) -> Stream:
        sent = {"Accept": "text/event-stream", **(headers or {})}
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        response = requests.get(
            base + path, headers=sent, params=params, stream=True, timeout=(5, read_timeout)
        )
        return cls(response)

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.response.close()

    def next(self) -> Message | None:
        """The next message or comment; None when the server ended the stream."""
        if self._chunks is None:
            self._chunks = self.response.iter_content(chunk_size=None)
        while b"\n\n" not in self._buffer:
            chunk = next(self._chunks, None)
            if chunk is None:
                return None
            self._buffer += chunk
        block, self._buffer = self._buffer.split(b"\n\n", 1)
        message = Message()
        for line in block.decode().split("\n"):
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "":
                message.comment = value
            elif name == "id":
                message.id = int(value)
            elif name == "event":
                message.event = value
            elif name == "data":
                message.data = json.loads(value)
        self.received.append(message)
        return message

    def events_until(self, version: int) -> list[Message]:
        """Every event message up to `version` (the stream must get there)."""
        found = []
        while not found or found[-1].id is None or found[-1].id < version:
            message = self.next()
            assert message is not None, f"the stream ended before version {version}"
            if message.id is not None:
                found.append(message)
        return found

    def rest(self) -> list[Message]:
        """Everything until the server ends the stream."""
        found = []
        while (message := self.next()) is not None:
            found.append(message)
        return found


def seconds_to_keep_alive(base: str, path: str, token: str) -> float:
    """Open a quiet stream (after an event far ahead) at `path`: its ": connected" comment,
    then how long its first ": keep-alive" comment took."""
    with Stream.open(base, path, token=token, after=99) as stream:
        first = stream.next()
        assert first is not None and first.comment == "connected"
        started = time.monotonic()
        second = stream.next()
        assert second is not None and second.comment == "keep-alive"
        return time.monotonic() - started
