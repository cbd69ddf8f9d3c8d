"""One root per layer (issue 27): every exception class a layer defines derives from that
layer's root, and `service/api/errors.py` answers every root (so no refusal falls through to
a 500 unless it is a store's unexpected error)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from service.api.refusal import ApiError
from service.application.errors import Refused
from service.eventlog.store import StoreError
from service.rules.errors import GutsError
from service.tables.errors import TableError

ROOTS: dict[str, tuple[type[BaseException], ...]] = {
    "service.rules": (GutsError,),
    "service.eventlog": (StoreError,),
    "service.tables": (TableError,),
    "service.application": (Refused,),
    "service.api": (ApiError,),
}


def _defined_in(package: str) -> list[type[BaseException]]:
    found = []
    module = importlib.import_module(package)
    names = [package] + [
        f"{package}.{info.name}" for info in pkgutil.walk_packages(module.__path__)
    ]
    for name in names:
        for _, cls in inspect.getmembers(importlib.import_module(name), inspect.isclass):
            private = cls.__name__.startswith("_")  # a module's own control flow
            if issubclass(cls, BaseException) and cls.__module__ == name and not private:
                found.append(cls)
    return found


@pytest.mark.parametrize("package", sorted(ROOTS))
def test_every_error_of_a_layer_derives_from_its_root(package: str) -> None:
    roots = ROOTS[package]
    strays = [cls.__qualname__ for cls in _defined_in(package) if not issubclass(cls, roots)]
    assert strays == []
    assert _defined_in(package), "the layer defines its root at least"


def test_every_root_has_a_handler() -> None:
    from flask import Flask

    from service.api import errors

    app = Flask("roots")
    errors.install(app)
    handled = set(app.error_handler_spec[None][None])
    assert {GutsError, StoreError, ApiError} <= handled
    assert issubclass(Refused, GutsError) and issubclass(TableError, GutsError)
