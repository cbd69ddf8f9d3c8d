"""The order the suite's tests are handed to xdist's workers in (tests/schedule.py): every
test once, whatever the selection (a whole run, one module, a -k that keeps only listed tests,
no listed test at all), and the listed ones first on the workers they are spread over."""

from __future__ import annotations

import pytest

from tests.schedule import LONGEST, spread

CHAOS = "tests/test_chaos.py::test_a_short_chaos_run_keeps_every_promise"
KILLED = "tests/test_cli.py::test_serve_restarts_a_killed_child_and_hands_still_close_by_themselves"
LIGHT = [f"tests/rules/test_cards.py::test_{n}" for n in range(40)]


def _listed(nodeid: str) -> bool:
    module, _, test = nodeid.partition("::")
    return "*" in LONGEST.get(module, {}) or test.split("[")[0] in LONGEST.get(module, {})


@pytest.mark.parametrize(
    "nodeids",
    [
        pytest.param([CHAOS, *LIGHT], id="one-listed"),
        pytest.param([f"{KILLED}[{child}]" for child in ("a", "b", "c", "d")], id="only-listed"),
        pytest.param([f"{KILLED}[a]", f"{KILLED}[b]", LIGHT[0]], id="more-listed-than-runs"),
        pytest.param(LIGHT[:5], id="none-listed"),
        pytest.param([CHAOS], id="one-test"),
        pytest.param([], id="nothing"),
    ],
)
@pytest.mark.parametrize("workers", [0, 1, 2, 3, 5])
def test_every_test_is_scheduled_once(nodeids: list[str], workers: int) -> None:
    assert all(_listed(n) for n in (CHAOS, KILLED + "[a]")) and not _listed(LIGHT[0])
    order = spread(nodeids, workers)
    assert sorted(order) == list(range(len(nodeids)))


def test_the_listed_tests_start_first_each_on_a_worker_of_its_own() -> None:
    nodeids = [*LIGHT[:20], CHAOS, *LIGHT[20:], f"{KILLED}[a]"]
    order = [nodeids[i] for i in spread(nodeids, 2)]
    half = len(order) // 2  # worksteal's first split: the first half to one worker
    assert order[0] == CHAOS and order[half] == f"{KILLED}[a]"
