"""The shortcuts around libraries (style habit 17) are each left out on demand: by name in
GUTS_SHORTCUTS_OFF (what tests/bench/bench_http.py --shortcuts sets for gunicorn) and in
`Settings.shortcuts_off` (what ``pytest --plain-requests`` sets for every app of the API's
tests); an app without one takes the library's plain path."""

from __future__ import annotations

from typing import Any

import pytest
from flask import jsonify

from service.api import flask_request_bypass
from service.api.app import create_app
from service.config import SHORTCUTS, Settings


def test_the_environment_names_the_shortcuts_left_out() -> None:
    assert Settings.from_env({}).shortcuts_off == frozenset()
    assert Settings.from_env({"GUTS_SHORTCUTS_OFF": "all"}).shortcuts_off == SHORTCUTS
    one = Settings.from_env({"GUTS_SHORTCUTS_OFF": " redis_py_bypass,"})
    assert one.shortcuts_off == {"redis_py_bypass"}
    both = Settings.from_env({"GUTS_SHORTCUTS_OFF": "redis_py_bypass,flask_request_bypass"})
    assert both.shortcuts_off == SHORTCUTS == {"flask_request_bypass", "redis_py_bypass"}


def test_an_unknown_shortcut_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="GUTS_SHORTCUTS_OFF names marshmallow_bypass:"):
        Settings.from_env({"GUTS_SHORTCUTS_OFF": "marshmallow_bypass,redis_py_bypass"})


def _paths(redis_url: str, off: frozenset[str]) -> dict[str, Any]:
    """Which path each shortcut's place takes, in an app built without `off`."""
    settings = Settings(redis_url=redis_url, token_secret="s", shortcuts_off=off)
    app = create_app(settings)

    @app.get("/which")
    def which() -> Any:
        return jsonify(environ=flask_request_bypass.current() is not None)

    answer = app.test_client().get("/which")
    assert answer.status_code == 200, answer.data
    store = app.extensions["guts"].usecases.tables.store
    plain_store = store._call == store.client.execute_command
    return {**answer.get_json(), "store": not plain_store}


@pytest.mark.parametrize("off", [frozenset(), *({name} for name in sorted(SHORTCUTS)), SHORTCUTS])
def test_an_app_takes_the_plain_path_of_each_shortcut_left_out(
    redis_url: str, off: frozenset[str]
) -> None:
    taken = _paths(redis_url, frozenset(off))
    assert taken == {
        "environ": "flask_request_bypass" not in off,
        "store": "redis_py_bypass" not in off,
    }
