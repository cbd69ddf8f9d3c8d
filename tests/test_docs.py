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
    config = (ROOT / "service" / "config.py").read_text()
    read = set(re.findall(r'env\.get\("([A-Z_]+)"', config))
    documented = set(re.findall(r"^\| `([A-Z_]+)`", README, re.M))
    documented |= set(re.findall(r"^\| `[A-Z_]+` / `([A-Z_]+)`", README, re.M))
    assert read == documented, (sorted(read - documented), sorted(documented - read))
