"""The code's shape (docs/architecture.md, "Working on the code"): no function or method of the
service or the workers runs longer than 60 lines, and no module longer than 400. A longer one
is asking to be split into steps with names; these tests name each that is not."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("service", "workers")
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400


def modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int, int]]:
    """(name, first line, lines) of every function or method in `source` over `limit` lines,
    from its `def` to its last line (decorators not counted, docstring counted)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                found.append((node.name, node.lineno, lines))
    return found


def test_no_function_is_longer_than_60_lines():
    offenders = [
        f"{path.relative_to(ROOT)}:{line} {name} ({lines} lines)"
        for path in modules()
        for name, line, lines in long_functions(path.read_text())
    ]
    assert not offenders, f"over {MAX_FUNCTION_LINES} lines: {offenders}"


def test_no_module_is_longer_than_400_lines():
    assert len(modules()) > 100, "the packages were not found"
    offenders = [
        f"{path.relative_to(ROOT)} ({lines} lines)"
        for path in modules()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert not offenders, f"over {MAX_MODULE_LINES} lines: {offenders}"


def test_a_method_of_61_lines_is_named_and_a_function_of_60_is_not():
    def function(name: str, lines: int, indent: str = "") -> str:
        """A function of `lines` lines, from its `def`."""
        body = "".join(f"{indent}    x = {i}\n" for i in range(lines - 1))
        return f"{indent}def {name}():\n{body}"

    source = function("fits", 60) + "class Table:\n" + function("too_long", 61, "    ")
    assert long_functions(source) == [("too_long", 62, 61)]


def test_the_background_processes_import_none_of_the_webs_libraries():
    """`guts dispatch` and `guts worker` start a process each, many times a day (a supervisor's
    restarts) and some 150 times a test run; importing is most of what a start costs (about
    0.3 CPU-s). gevent, `limits` and psutil serve the web workers (their sockets, the rate
    limits) and the embedded PostgreSQL: imported where they are used, they cost a dispatcher
    nothing (importing `workers.dispatcher` took 0.83x the CPU, 2026-12-07)."""
    import subprocess
    import sys

    for entry in ("workers.dispatcher", "workers.worker"):
        code = (
            f"import sys, {entry}; "
            "print(sorted({m.partition('.')[0] for m in sys.modules} & "
            "{'gevent', 'limits', 'psutil', 'flask', 'marshmallow', 'werkzeug'}))"
        )
        run = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
        )
        assert run.stdout.strip() == "[]", f"{entry} imports {run.stdout.strip()}"
