"""The base of every event (events.py and protection_events.py define them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Event:
    """Base of all events."""

    TYPE: ClassVar[str] = ""
    VERSION: ClassVar[int] = 1
