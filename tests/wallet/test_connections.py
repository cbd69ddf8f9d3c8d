"""The wallet's calls over kept connections (`service.projections.wallet_http`): calls to one
wallet share a connection; one the wallet closed is not used again; a call that failed never
leaves its connection to the next call, whose answer could otherwise be the late answer of
the one before."""

from __future__ import annotations

import http.server
import os
import shutil
import socket
import ssl
import subprocess
import threading
from typing import Any

import pytest

from service.projections.wallet_http import CONNECTIONS
from service.projections.wallet_messages import call, endpoint
from tests.waiting import eventually
from tests.wallet.conftest import PLAYERS
from tests.wallet_server import TestWallet

SECRET = "whsec_" + "c2VjcmV0LW9mLXRoZS10ZXN0cy13YWxsZXQtMzJieXRlcw=="


@pytest.fixture
def signed(wallet: TestWallet) -> TestWallet:
    wallet.secret = SECRET
    CONNECTIONS.close()  # (none kept from another test's wallet)
    return wallet


def _credit(wallet: TestWallet, n: int, timeout_s: float = 5.0) -> Any:
    payload = {"transaction_id": f"cr-{n}", "player_id": "ann", "table_id": "t",
               "amount": 1, "currency": "EUR", "reason": "cash_out"}  # fmt: skip
    return call(wallet.url, "credit", wallet.secret, payload, timeout_s, private_ok=True)


def test_calls_to_a_wallet_share_one_connection(signed: TestWallet):
    answers = [_credit(signed, n) for n in range(5)]
    assert [a.status for a in answers] == ["ok"] * 5
    assert [a.balance for a in answers] == [PLAYERS["ann"] + n for n in range(1, 6)]
    assert signed.connections == 1


def test_a_connection_the_wallet_closed_is_not_used_again(signed: TestWallet):
    assert _credit(signed, 1).status == "ok"
    signed.hang_up()
    # (its end seen at the wallet: it went out long before)
    eventually(lambda: not signed.open, 10, "the wallet hung up", every_s=0.01)
    assert _credit(signed, 2).status == "ok"  # (not an unknown outcome: a new connection)
    assert signed.connections == 2


@pytest.mark.parametrize("fault", ["slow", "down", "500", "garbage"])
def test_the_call_after_a_failed_one_gets_its_own_answer(signed: TestWallet, fault: str):
    signed.slow_s = 0.5  # (answers after the 0.2 s timeout: the connection must not be kept)
    assert _credit(signed, 1).status == "ok"
    signed.fail("credit", fault)
    assert _credit(signed, 2, timeout_s=0.2).status is None
    after = _credit(signed, 3)
    assert after.status == "ok", after.problem
    assert signed.count("credit") >= 2 and signed.calls[-1][1]["transaction_id"] == "cr-3"


def test_a_forked_child_leaves_the_parents_connections_alone(signed: TestWallet):
    """(gunicorn forks its workers: a child closes its copies of the kept connections, which
    must not end them for the parent.)"""
    assert _credit(signed, 1).status == "ok"
    child = os.fork()
    if child == 0:  # (the child's copies were closed as it was forked)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _credit(signed, 2).status == "ok"
    assert signed.connections == 1


@pytest.mark.parametrize(
    ("url", "called"),
    [
        ("https://w.example/guts", "https://w.example/guts/debit"),
        ("https://w.example/guts/", "https://w.example/guts/debit"),
        ("https://w.example/guts?token=t", "https://w.example/guts/debit?token=t"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/debit"),
    ],
)
def test_a_call_goes_to_the_path_under_the_wallet_url_with_its_query_kept(
    url: str, called: str
) -> None:
    assert endpoint(url, "debit") == called


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.9", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),  # (a cloud's metadata service)
        ("100.64.0.1", False),  # (shared address space)
        ("0.0.0.0", False),
        ("::1", False),
        ("::ffff:127.0.0.1", False),
        ("fe80::1%eth0", False),
        ("fd00::1", False),
        ("8.8.8.8", True),
        ("2001:4860:4860::8888", True),
        ("::ffff:8.8.8.8", True),
    ],
)
def test_which_addresses_are_public(address: str, public: bool):
    from service.projections.webhook_messages import public as is_public

    assert is_public(address) is public


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_no_call_reaches_a_wallet_at_a_private_address_unless_allowed(signed: TestWallet, host):
    """The address a new connection reached is checked before the request is sent: a wallet
    on 127.0.0.1 (named by its address or by a name that resolves to it) gets nothing, and the
    call is an unknown outcome naming why; allowed, the same call goes through."""
    payload = {"transaction_id": "cr-private", "player_id": "ann", "table_id": "t",
               "amount": 1, "currency": "EUR", "reason": "cash_out"}  # fmt: skip
    url = signed.url.replace("127.0.0.1", host)
    refused = call(url, "credit", signed.secret, payload, 5.0)
    assert refused.status is None and refused.problem == "PrivateAddress", refused
    assert signed.calls == [] and signed.effects["credit"] == 0
    allowed = call(url, "credit", signed.secret, payload, 5.0, private_ok=True)
    assert allowed.status == "ok", allowed
    assert signed.count("credit") == 1
    again = call(url, "credit", signed.secret, payload, 5.0)  # (not over the allowed one's
    assert again.problem == "PrivateAddress" and signed.count("credit") == 1  # connection)


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_call_refused_for_a_private_address_makes_no_connection_there(scheme: str):
    """The host is resolved and checked before connecting: nothing reaches a listener on
    127.0.0.1 (no TCP handshake, so no TLS one either), and a port where nothing listens fails
    the same way, so what a tenant reads of its calls cannot tell which ports are open."""
    from service.projections.wallet_http import PrivateAddress

    listener = socket.create_server(("127.0.0.1", 0))
    closed = socket.create_server(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    try:
        for port in (listener.getsockname()[1], closed_port):
            for host in ("127.0.0.1", "localhost"):
                with pytest.raises(PrivateAddress):
                    CONNECTIONS.post(f"{scheme}://{host}:{port}/w", b"{}", {}, 2.0)
        listener.settimeout(0.3)
        with pytest.raises(TimeoutError):  # (nothing connected: no connection to accept)
            listener.accept()
    finally:
        listener.close()


def test_an_https_wallet_is_called_over_tls_checked_against_its_name(tmp_path):
    """An https call connects (to a checked address, or any when allowed), then shakes hands
    verifying the certificate for the URL's host: trusted, the call goes through; a
    certificate the context does not trust fails the call."""
    from service.projections.wallet_http import Connections

    if shutil.which("openssl") is None:
        pytest.skip("NOT CHECKED: no openssl here to make the test's certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", key, "-out", cert, "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip

    class Answer(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - the library's name
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, key)
    server.socket = served.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"https://localhost:{server.server_address[1]}/w"
    try:
        trusted = Connections(ssl.create_default_context(cafile=str(cert)))
        assert trusted.post(url, b"{}", {}, 5.0, private_ok=True)[::2] == (200, b"ok")
        with pytest.raises(ssl.SSLCertVerificationError):
            Connections().post(url, b"{}", {}, 5.0, private_ok=True)
        trusted.close()
    finally:
        server.shutdown()
        server.server_close()
