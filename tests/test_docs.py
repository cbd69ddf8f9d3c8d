"""The README and CI agree with the code: the same test command, every setting documented."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _readme_commands() -> list[str]:
    return [line.strip() for line in README.splitlines()[:12] if line.startswith("    ")]


def test_readme_opens_with_a_run_and_a_test_command():
    run, test = _readme_commands()[:2]
    assert "guts serve" in run
    assert test.endswith("pytest")


def test_ci_runs_exactly_the_readmes_test_command():
    test = _readme_commands()[1]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test in [line.strip() for line in ci]


def _name(requirement: str) -> str:
    """The normalised project name of a requirement ("redis[hiredis]>=8" -> "redis")."""
    name = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert name, requirement
    return re.sub(r"[-_.]+", "-", name.group()).lower()


def test_the_test_command_installs_the_lock_and_the_project_without_resolving_again():
    test = _readme_commands()[1]
    assert "pip install -q -r requirements.lock" in test
    assert "pip install -q --no-deps -e ." in test


def test_the_lock_pins_every_dependency_of_the_dev_environment():
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    pins = [line.split(";")[0].strip() for line in lines if line and line[0] not in "# "]
    assert pins and all(re.fullmatch(r"[A-Za-z0-9._-]+==[A-Za-z0-9.+!]+", pin) for pin in pins)
    locked = {_name(pin) for pin in pins}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["dev"]
    assert {_name(requirement) for requirement in wanted} <= locked


def test_every_environment_variable_the_service_reads_is_documented():
    """In the README's configuration table, or a settings table of a page under docs/."""
    config = (ROOT / "service" / "config.py").read_text()
    read = set(re.findall(r'env\.get\("([A-Z_]+)"', config))
    documented: set[str] = set()
    for page in [README, *(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))]:
        documented |= set(re.findall(r"^\| `([A-Z_]+)`", page, re.M))
        documented |= set(re.findall(r"^\| `[A-Z_]+` / `([A-Z_]+)`", page, re.M))
    assert read == documented, (sorted(read - documented), sorted(documented - read))


def test_the_readmes_walkthrough_plays_a_hand_against_a_real_server(tmp_path: Path) -> None:
    """The curl walkthrough, run as written (with bash and curl) against `guts serve`: every
    command answers, and the hand's history is the one it played."""
    import json
    import shutil
    import subprocess

    import pytest

    from tests.test_cli import Served, _env

    if shutil.which("curl") is None:
        pytest.skip("curl is not installed: the walkthrough cannot be run as written")
    script = re.search(r"## One full hand with curl.*?```sh\n(.*?)```", README, re.S)
    assert script, "the README has no curl walkthrough"
    served = Served(tmp_path / "data", tmp_path, _env(GUTS_OPERATOR_KEYS="change-me"))
    try:
        served.wait_healthy()
        text = script.group(1).replace("http://127.0.0.1:8000", served.base)
        run = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", text],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, run.stderr
        bodies, at, decoder = [], 0, json.JSONDecoder()
        while at < len(run.stdout):  # curl writes the bodies back to back
            body, at = decoder.raw_decode(run.stdout, at)
            bodies.append(body)
            while at < len(run.stdout) and run.stdout[at].isspace():
                at += 1
        assert len(bodies) == 6 and not any("status" in b and "type" in b for b in bodies)
        history = bodies[-1]
        decisions = [(d["decision"], d["by"]) for d in history["decisions"].values()]
        assert decisions == [("in", "player")] * 2, history  # before the deadline: no platform
        assert history["seed"] and history["outcome"], history
    finally:
        served.kill()
