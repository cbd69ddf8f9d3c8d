"""The application service: the game's use cases, each one load -> rules decide -> append.

Edges (the HTTP routes, the jobs, the command line) call these with plain values: who is
calling (`Caller`), what the request asks of a command (`Conditions`), and the command's own
arguments; they get plain values back (`Outcome`: what was done, in the game's words, never
an HTTP status).
"""

from __future__ import annotations

from .access import Caller
from .errors import Forbidden
from .reads import TableReads
from .usecases import TableService
from .values import Conditions, Effect, HandHistory, Outcome, Quota, Subject

__all__ = [
    "Quota",
    "Caller",
    "Conditions",
    "Effect",
    "Forbidden",
    "HandHistory",
    "Outcome",
    "Subject",
    "TableReads",
    "TableService",
]
