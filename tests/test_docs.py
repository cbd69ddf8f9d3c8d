"""The README and CI agree with the code: the same test command, every setting documented."""

from __future__ import annotations

import re
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


def test_every_environment_variable_the_service_reads_is_documented():
    config = (ROOT / "service" / "config.py").read_text()
    read = set(re.findall(r'env\.get\("([A-Z_]+)"', config))
    documented = set(re.findall(r"^\| `([A-Z_]+)`", README, re.M))
    documented |= set(re.findall(r"^\| `[A-Z_]+` / `([A-Z_]+)`", README, re.M))
    assert read == documented, (sorted(read - documented), sorted(documented - read))
