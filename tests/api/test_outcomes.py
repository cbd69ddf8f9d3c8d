"""Only the edge speaks HTTP: every effect a use case may have has its status there (the
statuses themselves are the contract's, checked by the rest of this suite)."""

from __future__ import annotations

import typing

from service.api.http import STATUS_OF_EFFECT
from service.application.values import Effect


def test_every_effect_of_a_use_case_has_its_status():
    assert set(STATUS_OF_EFFECT) == set(typing.get_args(Effect))
