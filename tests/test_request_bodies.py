"""Request bodies over a real `guts serve` (gunicorn, gevent workers), sent byte for byte on
raw sockets: a malformed, truncated, oversized or endless body is refused promptly in
problem+json, never a 500, and changes nothing (service/processes/gunicorn_bodies.py)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.test_cli import OPERATOR_KEY, Served, _env

BODY_TIMEOUT_S = 2.0  # GUTS_BODY_TIMEOUT_S of the server below (the default is 10)
PROMPTLY_S = 1.5
"""How soon a body that cannot be taken must be refused (it waits for nothing)."""
SEAT = b'{"player_id": "p1", "buy_in": 100}'


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("bodies")
    running = Served(tmp / "data", tmp, env=_env(GUTS_BODY_TIMEOUT_S=str(BODY_TIMEOUT_S)))
    try:
        running.wait_healthy(said=False)
        yield running
    finally:
        running.kill()


@pytest.fixture
def table(served: Served) -> str:
    response = served.call("POST", "/v1/tables", {"preset": "three-card"})
    assert response.status_code == 201, response.text
    return str(response.json()["table_id"])


def _version(served: Served, table: str) -> str:
    response = served.call("GET", f"/v1/tables/{table}")
    assert response.status_code == 200, response.text
    return str(response.headers["ETag"])


def _seat_request(table: str, framing: str) -> bytes:
    head = [
        f"POST /v1/tables/{table}/players HTTP/1.1",
        "Host: guts",
        f"Authorization: Bearer {OPERATOR_KEY}",
        "Content-Type: application/json",
        framing,
        "Connection: close",
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode()


def _exchange(
    port: int, request: bytes, half_close: bool
) -> tuple[float, int, dict[str, str], Any]:
    """Send `request` (then close our side when `half_close`); how long the whole answer took
    to come, its status, headers (lower-case names) and JSON body."""
    with socket.create_connection(("127.0.0.1", port), timeout=BODY_TIMEOUT_S + 10) as conn:
        started = time.monotonic()
        conn.sendall(request)
        if half_close:
            conn.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
        took = time.monotonic() - started
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {n.strip().lower(): v.strip() for n, _, v in (x.partition(":") for x in lines)}
    return took, int(status_line.split()[1]), headers, json.loads(body)


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


CHUNKED = "Transfer-Encoding: chunked"
MALFORMED = {  # case -> (framing header, body, closes its side, status, words of the detail)
    "chunk size zz": (CHUNKED, b"zz\r\n" + SEAT + b"\r\n0\r\n\r\n", False, 400, "hexadecimal"),
    "chunk size -1": (CHUNKED, b"-1\r\n" + SEAT + b"\r\n0\r\n\r\n", False, 400, "hexadecimal"),
    "no CRLF after a chunk": (
        CHUNKED,
        _chunk(SEAT)[:-2] + b"XX0\r\n\r\n",
        False,
        400,
        "does not end with CRLF",
    ),
    "junk chunk extension": (
        CHUNKED,
        f"{len(SEAT):x};\x01junk\r\n".encode() + SEAT + b"\r\n0\r\n\r\n",
        False,
        400,
        "chunk extension is not valid",
    ),
    "EOF mid-chunk": (CHUNKED, _chunk(SEAT)[:12], True, 400, "ended before it was complete"),
    "EOF before the last chunk": (CHUNKED, _chunk(SEAT), True, 400, "ended before"),
    "no trailer section after the last chunk": (
        CHUNKED,
        _chunk(SEAT) + b"0\r\n",
        True,
        400,
        "has no last chunk",
    ),
    "chunk size of 20 hex digits": (
        CHUNKED,
        b"ffffffffffffffffffff\r\n" + SEAT + b"\r\n0\r\n\r\n",
        False,
        400,
        "beyond 2^63 - 1 bytes",
    ),
    "a chunk larger than the body limit": (
        CHUNKED,
        b"10001\r\n" + SEAT,  # 65537 bytes announced, 35 sent: refused before waiting for them
        False,
        413,
        "larger than the limit of 65536 bytes",
    ),
    "chunks adding up to more than the limit": (
        CHUNKED,
        _chunk(b" " * 40_000) + b"8000\r\n",
        False,
        413,
        "larger than the limit of 65536 bytes",
    ),
    "EOF before the Content-Length": (
        f"Content-Length: {len(SEAT) + 10}",
        SEAT,
        True,
        400,
        "ended before it was complete",
    ),
}
TITLES = {400: "Bad Request", 408: "Request Timeout", 413: "Payload Too Large"}


def _assert_problem(status: int, headers: dict[str, str], problem: Any, expected: int) -> None:
    assert status == expected, problem
    assert headers["content-type"] == "application/problem+json"
    assert headers["connection"] == "close"  # the framing is lost: the connection ends
    title = TITLES[expected]
    assert problem["status"] == expected and problem["title"] == title
    assert problem["type"] == "https://guts.example/problems/" + title.lower().replace(" ", "-")


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_body_is_refused_promptly_in_problem_json_and_writes_nothing(
    served: Served, table: str, case: str
) -> None:
    framing, body, half_close, expected, words = MALFORMED[case]
    before = _version(served, table)
    took, status, headers, problem = _exchange(
        served.port, _seat_request(table, framing) + body, half_close
    )
    _assert_problem(status, headers, problem, expected)
    assert words in problem["detail"]
    assert took < PROMPTLY_S
    assert _version(served, table) == before


@pytest.mark.parametrize("framing", [CHUNKED, f"Content-Length: {len(SEAT)}"])
def test_a_body_that_never_ends_is_cut_off_after_the_body_timeout(
    served: Served, table: str, framing: str
) -> None:
    before = _version(served, table)
    sent = _chunk(SEAT)[:12] if framing == CHUNKED else SEAT[:12]
    request = _seat_request(table, framing) + sent  # and then nothing, the connection kept open
    took, status, headers, problem = _exchange(served.port, request, half_close=False)
    _assert_problem(status, headers, problem, 408)
    assert problem["detail"] == f"the body did not arrive within {BODY_TIMEOUT_S:g} s"
    assert BODY_TIMEOUT_S <= took < BODY_TIMEOUT_S + PROMPTLY_S
    assert _version(served, table) == before


@pytest.mark.parametrize("split", [1, 7, len(SEAT)])
def test_a_well_formed_chunked_body_is_read_whole_and_seats_the_player(
    served: Served, table: str, split: int
) -> None:
    before = int(_version(served, table).strip('"'))
    body = _chunk(SEAT[:split]) + (_chunk(SEAT[split:]) if split < len(SEAT) else b"")
    request = _seat_request(table, CHUNKED) + body + b"0\r\n\r\n"
    _, status, _, seated = _exchange(served.port, request, half_close=False)
    assert status == 201, seated
    assert seated["player_id"] == "p1"
    assert _version(served, table) == f'"{before + 1}"'
