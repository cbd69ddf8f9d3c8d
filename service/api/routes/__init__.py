"""The v1 routes. Each authenticates the caller, loads its body with a schema, calls one use
case of the application service (`service.application.TableService`) and renders what it
returns; the game's flow and who may do what at a table are the use cases' business.

(The role checks here only keep the contract's order of refusals: a caller who may not use
a route at all hears 403 before anything is said about their body. The use cases check the
same again, and everything that depends on the table's state.)
"""

from __future__ import annotations

from . import history, money, reports, tables

BLUEPRINTS = (tables.routes, history.routes, money.routes, reports.routes)
"""The /v1 routes, one blueprint per concern."""
