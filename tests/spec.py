"""openapi.yaml as the tests read it: parsed once per process, by libyaml where PyYAML has it
(PyYAML's own parser takes about a second for the 200 KB document, and the suite read it
afresh in every case of tests/test_openapi.py), each caller given a copy of its own."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml

SPEC_FILE = Path(__file__).resolve().parents[1] / "openapi.yaml"


@functools.cache
def _parsed() -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loaded: dict[str, Any] = yaml.load(SPEC_FILE.read_text(), Loader=loader)  # noqa: S506
    return loaded


def load_spec() -> dict[str, Any]:
    """openapi.yaml, parsed (a copy: the caller may change it)."""
    return copy.deepcopy(_parsed())
