"""The command line: ``guts verify`` and ``python -m service.fairness``."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

from .checks import verify_history
from .report import INVALID

EXIT_VERIFIED = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2

_HTTP_TIMEOUT_S = 30


class _BadInput(Exception):
    """The input could not be read as a JSON document."""


def _read(source: str, token: str | None) -> Any:
    """The JSON document at `source`: a file path, "-" for stdin, or an http(s) URL."""
    if source.startswith(("http://", "https://")):
        try:
            request = urllib.request.Request(source, headers={"Accept": "application/json"})
            if token:
                request.add_header("Authorization", f"Bearer {token}")
            with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT_S) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            with error:
                body = error.read(2000).decode("utf-8", "replace")
            raise _BadInput(f"GET {source}: HTTP {error.code}: {_problem(body)}") from None
        except (urllib.error.URLError, OSError) as error:
            raise _BadInput(f"GET {source}: {getattr(error, 'reason', error)}") from None
        except (ValueError, http.client.InvalidURL) as error:  # (one that cannot be sent)
            raise _BadInput(f"{source}: not a URL that can be fetched ({error})") from None
        except http.client.HTTPException as error:  # (what answered does not speak HTTP)
            raise _BadInput(f"GET {source}: not an HTTP answer ({error!r})") from None
    elif source == "-":
        raw = sys.stdin.buffer.read()
    else:
        try:
            with open(source, "rb") as file:
                raw = file.read()
        except OSError as error:
            raise _BadInput(f"{source}: {error.strerror or error}") from None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise _BadInput(f"{source}: not JSON ({error})") from None


def _problem(body: str) -> str:
    """The useful part of an error body: a problem+json title and detail, else the text."""
    try:
        problem = json.loads(body)
    except ValueError:
        return body.strip()[:200] or "(no body)"
    if isinstance(problem, dict):
        parts = [str(problem[k]) for k in ("title", "detail") if problem.get(k)]
        if parts:
            return ": ".join(parts)
    return body.strip()[:200]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guts verify",
        description=(
            "Verify a Guts hand history: the seed against its commitment and every visible "
            "card against the deck the seed derives. Exit status: 0 verified, 1 a check "
            "failed or the hand cannot be verified, 2 bad input."
        ),
    )
    parser.add_argument(
        "source",
        help="a hand-history JSON file, '-' for stdin, or the http(s) URL of "
        "GET /v1/tables/{table_id}/hands/{hand}",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--token",
        default=os.environ.get("GUTS_TOKEN"),
        help="bearer token sent with a URL (default: $GUTS_TOKEN)",
    )
    parser.add_argument(
        "--client-seed",
        metavar="SEED",
        help="the client seed you chose for this hand: checked to be among the players' "
        "seeds mixed into the deck",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``guts verify`` with `argv` (the arguments after "verify"); returns the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse exits 2 on usage errors, 0 for --help
        return int(exit_.code or 0)
    try:
        history = _read(args.source, args.token)
    except _BadInput as error:
        if args.json:
            print(json.dumps({"ok": False, "status": INVALID, "error": str(error)}))
        print(f"guts verify: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    report = verify_history(history, args.client_seed)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.render())
    if report.status == INVALID:
        return EXIT_BAD_INPUT
    return EXIT_VERIFIED if report.ok else EXIT_FAILED
