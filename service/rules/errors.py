"""The rules layer's exceptions: one root, each subclass says what kind of "no" it is.

The API turns these into HTTP responses in one place (service/api/errors.py); nothing else
catches them to decide a status code.
"""

from __future__ import annotations


class GutsError(Exception):
    """Root of every error the rules raise on purpose."""

    def __init__(self, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field


class InvalidRules(GutsError):
    """A ruleset option is unknown, out of range, or cannot work with another option."""


class InvalidCard(GutsError):
    """A card, or a set of cards, is not valid (bad text, duplicate, wrong count)."""


class InvalidCommand(GutsError):
    """A command whose arguments are malformed (not a state problem): a 422, not a 409."""


class RuleViolation(GutsError):
    """A command that is well formed but not allowed in the table's current state."""


class NotYourTurn(RuleViolation):
    """A sequential declaration from a seat that is not the one on turn."""


class UnknownSeat(RuleViolation):
    """A seat number that does not exist, or holds nobody, at this table."""
