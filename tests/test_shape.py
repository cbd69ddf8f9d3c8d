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
