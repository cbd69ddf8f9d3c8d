"""Settings read from the environment: a number that is not one, or outside what its setting
takes, stops the start with one line naming the variable (it ran before, and broke later: a
body limit of -1 refused every body with 413, a NaN body timeout turned the slow-body guard
off, a negative idempotency TTL killed the dispatchers with a traceback)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.config import _RANGES, Settings


def _guts(env: dict[str, str], *args: str) -> tuple[int, list[str]]:
    """`guts *args` run with `env`: its exit status and the lines it wrote."""
    command = [sys.executable, "-m", "service.cli", *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    return done.returncode, [line for line in (done.stdout + done.stderr).splitlines() if line]


def test_every_number_setting_has_a_range() -> None:
    numbers = {
        f.name
        for f in dataclasses.fields(Settings)
        if f.type in ("int", "float") and f.name != "redis_cluster"
    }
    assert numbers == set(_RANGES)


@pytest.mark.parametrize("field", sorted(_RANGES))
def test_a_number_below_its_range_is_refused_naming_the_variable(field: str) -> None:
    allowed = _RANGES[field]
    below = allowed.least if allowed.above else allowed.least - 1
    with pytest.raises(ValueError, match=f"^{allowed.name} must be "):
        Settings.from_env({allowed.name: str(int(below))})


@pytest.mark.parametrize("raw", ["abc", "nan", "inf", "-inf", "1e400", "0x10"])
@pytest.mark.parametrize("name", ["GUTS_MAX_BODY_BYTES", "GUTS_BODY_TIMEOUT_S", "GUTS_PORT"])
def test_what_is_not_a_finite_number_is_refused_naming_the_variable(name: str, raw: str) -> None:
    with pytest.raises(ValueError, match=f"^{name} must be a (whole )?number, not '{raw}'$"):
        Settings.from_env({name: raw})


def test_the_edges_of_each_range_are_taken_and_empty_is_the_default() -> None:
    settings = Settings.from_env(
        {
            "GUTS_PORT": "65535",
            "GUTS_DISPATCHERS": "0",
            "GUTS_MAX_BODY_BYTES": " 1 ",
            "GUTS_BODY_TIMEOUT_S": "0.001",
            "GUTS_STREAM_KEEP_ALIVE_S": "15",
            "GUTS_REDIS_WAIT_S": "0",
            "GUTS_IDEMPOTENCY_TTL_S": "",
        }
    )
    assert (settings.port, settings.dispatchers, settings.max_body_bytes) == (65535, 0, 1)
    assert (settings.body_timeout_s, settings.stream_keep_alive_s) == (0.001, 15)
    assert settings.idempotency_ttl_s == 24 * 3600
    with pytest.raises(ValueError, match="^GUTS_PORT must be at least 0 and at most 65535"):
        Settings.from_env({"GUTS_PORT": "65536"})
    # A call that could outlive the lease of its claim would be made twice at once.
    with pytest.raises(ValueError, match="^GUTS_WALLET_TIMEOUT_S must be more than 0 and at most"):
        Settings.from_env({"GUTS_WALLET_TIMEOUT_S": "30", "GUTS_WALLET_DEBIT_GRACE_S": "60"})
    with pytest.raises(ValueError, match="^GUTS_WEBHOOK_TIMEOUT_S must be more than 0 and at m"):
        Settings.from_env({"GUTS_WEBHOOK_TIMEOUT_S": "20"})


def test_a_debit_grace_no_longer_than_the_wallets_timeout_is_refused() -> None:
    with pytest.raises(ValueError, match="GUTS_WALLET_DEBIT_GRACE_S must be longer than"):
        Settings.from_env({"GUTS_WALLET_TIMEOUT_S": "20", "GUTS_WALLET_DEBIT_GRACE_S": "20"})
    taken = {"GUTS_WALLET_TIMEOUT_S": "0.5", "GUTS_WALLET_DEBIT_GRACE_S": "1"}
    assert Settings.from_env(taken).wallet_debit_grace_s == 1


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("GUTS_MAX_BODY_BYTES", "-1", "at least 1, not -1"),
        ("GUTS_BODY_TIMEOUT_S", "nan", "a number, not 'nan'"),
        ("GUTS_WEB_WORKERS", "two", "a whole number, not 'two'"),
    ],
)
def test_guts_serve_with_a_bad_setting_exits_2_with_one_line_and_starts_nothing(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    env = {**os.environ, variable: value, "GUTS_DATA_DIR": str(tmp_path / "data")}
    env.pop("REDIS_URL", None)
    code, lines = _guts(env, "serve", "--port", "0")
    assert code == 2 and len(lines) == 1, lines
    assert f"bad setting in the environment: {variable} must be {said}" in lines[0]
    assert not (tmp_path / "data").exists()  # no Redis, no PostgreSQL was started


@pytest.mark.parametrize("name", ["REDIS_URL", "GUTS_QUEUE_REDIS_URL"])
@pytest.mark.parametrize(
    "url", ["notaurl", "http://host", "redis://:hunter2@[::1/0", "redis://:hunter2@host:port/0"]
)
def test_a_redis_url_redis_py_cannot_read_is_refused_without_echoing_it(
    name: str, url: str
) -> None:
    with pytest.raises(ValueError, match=f"^{name} must be a redis://") as refused:
        Settings.from_env({name: url})
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize("url", ["garbage", "postgresql://u:hunter2@[::1/x", "host=x port"])
def test_a_database_url_libpq_cannot_read_is_refused_without_echoing_it(url: str) -> None:
    with pytest.raises(ValueError, match="^GUTS_DATABASE_URL must be a postgresql:// URL") as no:
        Settings.from_env({"GUTS_DATABASE_URL": url})
    assert "hunter2" not in str(no.value)
    good = "postgresql://u:pw@127.0.0.1:5432/x"
    assert Settings.from_env({"GUTS_DATABASE_URL": good}).database_url == good


def test_guts_release_with_its_redis_away_says_so_in_one_line(tmp_path: Path) -> None:
    """It was a traceback (redis-py's ConnectionError, uncaught)."""
    from service.processes.redis_server import free_port

    env = {**os.environ, "REDIS_URL": f"redis://:hunter2@127.0.0.1:{free_port()}/0"}
    code, lines = _guts(env, "release", "some-table")
    assert code == 1 and len(lines) == 1 and "cannot be reached" in lines[0], lines
    assert "hunter2" not in lines[0] and "Traceback" not in lines[0]
