"""The README, docs/ and CI agree with the code: the same test command, every setting, flag and
rules option documented with the code's default, every link and every `guts` command shown
valid, the README short."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from tests.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"
OPERATIONS = (DOCS / "operations.md").read_text()
RULES = (DOCS / "rules.md").read_text()
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


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
    """In a settings table of a page under docs/ (docs/operations.md has them all but the
    rate limits', which docs/operations-limits.md has)."""
    config = (ROOT / "service" / "config.py").read_text()
    read = set(re.findall(r'(?:env\.get\(|_number\(env, )"([A-Z_]+)"', config))
    documented: set[str] = set()
    for page in (p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))):
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


# --- the README is a front door -----------------------------------------------------------

README_MAX_BYTES = 16_000


def test_the_readme_is_a_front_door_of_at_most_16000_bytes():
    size = len(README.encode())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes: move the detail into docs/"


# --- docs/rules.md: every option of the ruleset, with the code's default ----------------------


def _section(text: str, heading: str) -> str:
    """The body of the `## heading` section of a markdown page (up to the next `## `)."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no '## {heading}' section"
    return match.group(1)


def _value(text: str) -> Any:
    """A value as rules.md writes it: JSON for null, booleans and numbers, else a bare word."""
    if text in ("null", "true", "false") or re.fullmatch(r"-?\d+(\.\d+)?", text):
        return json.loads(text)
    return text


def _same(a: Any, b: Any) -> bool:
    return (type(a), a) == (type(b), b)  # True == 1 in Python: the type tells them apart


def test_rules_md_lists_every_option_of_the_ruleset_with_the_codes_default():
    from service.rules.ruleset import Ruleset

    rows = re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", _section(RULES, "Options"), re.M)
    documented = dict(rows)
    assert len(documented) == len(rows), "an option is listed twice"
    code = {f.name for f in fields(Ruleset)}
    assert set(documented) == code, (sorted(code - set(documented)), sorted(set(documented) - code))
    default = Ruleset()
    wrong = {
        name: (text, getattr(default, name))
        for name, text in documented.items()
        if not _same(_value(text), getattr(default, name))
    }
    assert not wrong, f"documented default != the code's: {wrong}"


def test_every_option_has_its_own_section_with_an_example():
    from service.rules.ruleset import OPTION_NAMES

    options = _section(RULES, "Options")
    for name in OPTION_NAMES:
        body = re.search(rf"^#### `{name}`\n(.*?)(?=^#|\Z)", options, re.M | re.S)
        assert body, f"rules.md has no '#### `{name}`' section"
        assert "Example" in body.group(1), f"the section of {name} has no example"


def test_rules_md_presets_are_the_codes_presets():
    from service.rules.ruleset import OPTION_NAMES, PRESET_CAP_MULTIPLE, PRESETS, Ruleset

    section = _section(RULES, "Presets")
    documented: dict[str, dict[str, Any]] = {}
    for preset, cell in re.findall(r"^\| `([\w-]+)` \| (.*) \|$", section, re.M):
        base = re.match(r"as `([\w-]+)`", cell)
        changes = dict(documented[base.group(1)]) if base else {}
        changes |= {k: _value(v) for k, v in re.findall(r"`(\w+): ([^`]+)`", cell)}
        documented[preset] = changes
    assert set(documented) == set(PRESETS)
    default = Ruleset()
    for preset, rules in PRESETS.items():
        expected = {
            name: getattr(rules, name)
            for name in OPTION_NAMES
            if not _same(getattr(rules, name), getattr(default, name))
        }
        got = documented[preset]
        assert got.keys() == expected.keys(), (preset, got, expected)
        assert all(_same(got[k], expected[k]) for k in got), (preset, got, expected)
    for preset, multiple in PRESET_CAP_MULTIPLE.items():
        assert f"`{preset}`" in section and f"{multiple} antes" in section


def test_openapi_rule_options_are_the_rulesets_options():
    from service.rules.ruleset import OPTION_NAMES

    spec = load_spec()
    properties = spec["components"]["schemas"]["RuleOptions"]["properties"]
    assert set(properties) == set(OPTION_NAMES)


# --- nothing points outside the repository --------------------------------------------------

SEED_REFERENCE = re.compile(r"(?i:\bseeds? \d{3}\b|\.\./shared/)|(?<![\w/])RULES\.md\b")


def _user_facing_files() -> list[Path]:
    code = [*(ROOT / "service").rglob("*.py"), *(ROOT / "workers").rglob("*.py")]
    return [*PAGES, ROOT / "openapi.yaml", ROOT / "CHANGELOG.md", *code]


def test_no_reference_to_source_documents_outside_the_repository():
    """The rulebook is docs/rules.md: no "seed 000", "../shared/..." or "RULES.md" that no
    user can look up, in the docs, the contract, the changelog or the code's comments."""
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _user_facing_files()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if SEED_REFERENCE.search(line)
    ]
    assert not found, "\n".join(found)


# --- links ----------------------------------------------------------------------------------

FENCE = re.compile(r"^(\s*)(```|~~~)")


def _prose_lines(text: str) -> list[str]:
    """The page's lines outside fenced code blocks, inline code spans removed."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and not line.startswith("    "):
            lines.append(re.sub(r"`[^`]*`", "", line))
    return lines


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text, lower-cased, punctuation (but `-` and `_`)
    dropped, each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts by its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading's anchor on a page, duplicates numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in page.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        heading = re.match(r"#{1,6} (.+?)\s*#*$", line)
        if fenced or not heading:
            continue
        slug = github_slug(heading.group(1))
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _links(page: Path) -> list[str]:
    return [link for line in _prose_lines(page.read_text()) for link in LINK.findall(line)]


def test_github_slugs_are_made_as_github_makes_them():
    assert github_slug("9. Running `guts verify`") == "9-running-guts-verify"
    assert github_slug("Money: the ledger") == "money-the-ledger"
    assert github_slug("The archive (PostgreSQL)") == "the-archive-postgresql"
    assert github_slug("Ties, suits and wild cards") == "ties-suits-and-wild-cards"
    assert github_slug("`bench_eval`") == "bench_eval"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    """Each relative link's file exists, and a #fragment names a heading of the .md page."""
    broken = []
    for link in _links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", link):  # https:, mailto:
            continue
        path, _, fragment = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif fragment and target.suffix == ".md" and fragment not in anchors(target):
            broken.append(f"{link}: no heading #{fragment} in {target.relative_to(ROOT)}")
    assert not broken, broken
    assert page.name != "README.md" or _links(page), "the README links to nothing"


# --- the `guts` commands the docs show -----------------------------------------------------


SHELL = {"", "sh", "bash", "shell", "console"}


def _code_lines(text: str) -> list[tuple[str, bool]]:
    """Shell lines of the page, each with whether it is a whole command line: the lines of
    indented code blocks and of fenced blocks in a shell language (or none), and inline code
    spans that begin `guts ` (a mention: its values may be left out)."""
    lines: list[tuple[str, bool]] = []
    fence: str | None = None
    for line in text.splitlines():
        opening = FENCE.match(line)
        if opening:
            fence = None if fence is not None else line.strip().strip("`~").strip()
        elif fence is not None:
            if fence in SHELL:
                lines.append((line, True))
        elif line.startswith("    "):
            lines.append((line, True))
        else:
            spans = re.findall(r"`([^`]+)`", line)
            lines += [(span, False) for span in spans if span.startswith("guts ")]
    return lines


GUTS = re.compile(r"(?:^|[\s;&|(])(?:\$ )?(?:\S*/)?guts(?=\s|$)")
OPERATORS = {"&&", "||", "|", ";", "(", ")", "&"}


def guts_invocations(line: str) -> list[list[str]]:
    """The arguments of each `guts` command run on a shell line (after `guts`)."""
    if not GUTS.search(line):
        return []
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    tokens = list(lexer)
    commands: list[list[str]] = [[]]
    skip = False
    for token in tokens:
        if skip:
            skip = False
        elif token in OPERATORS:
            commands.append([])
        elif token in ("<", ">", ">>", "2>"):
            skip = True  # a redirection and its file are no argument
        else:
            commands[-1].append(token)
    found = []
    for words in commands:
        while words and (words[0] == "$" or re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0])):
            words = words[1:]  # a prompt, VAR=value assignments
        if words and (words[0] == "guts" or words[0].endswith("/guts")):
            found.append(words[1:])
    return found


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's own parser, as `guts` builds it (verify parses its own arguments)."""
    from service.cli import SUBCOMMANDS
    from service.config import Settings
    from service.fairness.cli import _parser as verify_parser

    parsers = {}
    for command in SUBCOMMANDS:
        parser = argparse.ArgumentParser(prog=f"guts {command.name}")
        command.configure(parser, Settings())
        parsers[command.name] = parser
    parsers["verify"] = verify_parser()
    return parsers


def check_guts_command(args: list[str], whole: bool = True) -> str | None:
    """Why `guts <args>` would not be accepted (None when it would), without running it; for a
    mention (not `whole`), only the subcommand and the flags' names are checked."""
    parsers = _parsers()
    if args in (["--version"], ["--help"], ["-h"]):
        return None
    if not args or args[0] not in parsers:
        return f"no subcommand {args[:1]} (one of {sorted(parsers)})"
    parser, rest = parsers[args[0]], args[1:]
    for word in rest[: rest.index("--")] if "--" in rest else rest:  # after --: arguments
        flag = word.split("=", 1)[0]
        if flag.startswith("-") and flag != "-" and flag not in parser._option_string_actions:
            return f"guts {args[0]} has no flag {flag}"
    if not whole or any("$" in word or "<" in word for word in rest):
        return None  # a mention, or placeholders: the flags are known, the values unknown
    try:
        parser.parse_args(rest)
    except SystemExit:
        return f"guts {args[0]} refuses {rest}"
    return None


def test_the_command_checker_refuses_what_guts_refuses():
    assert guts_invocations("GUTS_OPERATOR_KEYS=k .venv/bin/guts serve --port 9000") == [
        ["serve", "--port", "9000"]
    ]
    assert guts_invocations("$ guts verify - < hand.json  # stdin") == [["verify", "-"]]
    assert check_guts_command(["serve", "--port", "9000"]) is None
    assert check_guts_command(["verify", "--client-seed", "x", "hand.json"]) is None
    assert check_guts_command(["serve", "--prot", "9000"]) == "guts serve has no flag --prot"
    assert check_guts_command(["worker", "--port", "1"]) == "guts worker has no flag --port"
    assert check_guts_command(["serve", "--port", "eighty"]) is not None
    assert check_guts_command(["verify"]) is not None  # a history is required
    assert check_guts_command(["play"]) is not None
    assert check_guts_command(["verify", "--token"], whole=False) is None  # a mention
    assert check_guts_command(["verify", "--tokn"], whole=False) is not None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_guts_command_shown_is_accepted_by_its_parser(page: Path) -> None:
    problems = []
    for line, whole in _code_lines(page.read_text()):
        for args in guts_invocations(line):
            why = check_guts_command(args, whole)
            if why:
                problems.append(f"{line.strip()}: {why}")
    assert not problems, problems


def test_the_docs_show_guts_commands():
    shown = [
        args
        for page in PAGES
        for line, whole in _code_lines(page.read_text())
        if whole
        for args in guts_invocations(line)
    ]
    assert {args[0] for args in shown if args} >= {"serve", "verify"}


def test_every_flag_of_every_guts_command_is_documented():
    documented = set(re.findall(r"^\| `guts(?: ([\w-]+))?` \| `(--[\w-]+)` \|", OPERATIONS, re.M))
    flags = {("", "--version")}
    for name, parser in _parsers().items():
        flags |= {(name, f) for f in parser._option_string_actions if f.startswith("--")}
    flags -= {(name, "--help") for name in _parsers()}
    assert flags == documented, (sorted(flags - documented), sorted(documented - flags))


def test_the_limits_table_is_what_gunicorn_and_the_settings_enforce():
    from service.config import Settings

    conf = (
        ROOT / "service" / "processes" / "gunicorn_conf.py"
    ).read_text()  # importing it patches gevent
    limit = {k: v for k, v in re.findall(r"^(limit_request_\w+) = (\d+)", conf, re.M)}
    rows = re.findall(
        r"^\| ([^|]+?) \| ([^|]+?) \| (\d{3}) \|$", _section(OPERATIONS, "Limits"), re.M
    )
    table = {what: (size, status) for what, size, status in rows}
    assert table == {
        "request line (method, target and version)": (
            f"{limit['limit_request_line']} bytes",
            "414",
        ),
        "header fields in one request": (limit["limit_request_fields"], "431"),
        "one header field (name and value)": (f"{limit['limit_request_field_size']} bytes", "431"),
        "request body": (f"`GUTS_MAX_BODY_BYTES` ({Settings().max_body_bytes} bytes)", "413"),
        "time for a request body to arrive whole": (
            f"`GUTS_BODY_TIMEOUT_S` ({Settings().body_timeout_s:g} s)",
            "408",
        ),
    }
