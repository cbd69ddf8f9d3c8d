"""Verify a Guts hand history: the seed commitment, and every visible card against the deck
that the published seed derives.

This package uses only the Python standard library and imports nothing else from the service
(its modules import each other relatively), so a player or an auditor can copy this one
directory and check hands without trusting the operator's code. The algorithm it re-implements
is described in docs/fairness.md; in short:

1. ``commitment`` (published at the deal) must equal ``sha256(seed).hexdigest()``, where
   ``seed`` is the hex seed published once the hand is over.
2. The deck context is ``f"guts-v1|{table_id}|{hand}|{client_seed}"`` in UTF-8, or, when
   players chose seeds for the hand (``client_seeds``), ``"guts-v2|"`` followed by netstrings
   (``<byte length>:<text>,``) of the table id, the hand, the client seed, and each seat's
   number and seed in seat order (``deck_context``).
3. Block ``n`` = HMAC-SHA256(key=seed, msg=context + b"|" + n as 8 bytes big-endian); the blocks
   are read as consecutive 4-byte big-endian unsigned words.
4. Fisher-Yates from the canonical deck (2s 2h 2d 2c 3s ... Ad Ac): for i = 51 down to 1, with
   m = i + 1, draw words until one is below ``2**32 - 2**32 % m``, then swap indices i and
   ``word % m``.
5. Deal one card at a time from index 0: to each seat in ``order``, then the kitty (when
   dealt), round after round, until every hand has its cards.
6. Cards that move afterwards (pass the trash, community cards, draws) are followed as far as
   the history shows them, and the hands shown at the end are checked against what each seat
   could hold (see ``after_deal``).
7. The settlement adds up: the pot in play (with a betting round, the bets included), reserve,
   side pot and matches equal what was won plus what is left, and the betting round's actions
   follow the fixed limit and sum to the bets the outcome names (see ``settlement``).

Usage, as a library::

    report = verify_history(json.load(open("hand.json")))
    print(report.render())
    assert report.ok

or from a shell: ``guts verify hand.json``, ``python -m service.fairness URL --token T``, or,
with a copy of this directory named ``verify``, ``python3 -m verify hand.json``
(``--json`` for a machine-readable report). Exit status: 0 verified, 1 a check failed or the
hand cannot be verified, 2 the input could not be read or is not a hand history.

The modules, in the order of the checks: ``deck`` (the shuffle and the deal), ``history``
(reading a hand history), ``checks`` (the checks, and ``verify_history``), ``after_deal``
(passes, community cards, draws), ``settlement`` (the chips and the betting round),
``report`` (the verdict) and ``cli`` (the command line).
"""

from __future__ import annotations

from .checks import verify_history
from .cli import main
from .deck import CONTEXT_FORMAT, FULL_DECK, deal_cards, deck_context, derive_deck, draw_context
from .report import Check, VerifyReport

__all__ = [
    "CONTEXT_FORMAT",
    "FULL_DECK",
    "Check",
    "VerifyReport",
    "deal_cards",
    "deck_context",
    "derive_deck",
    "draw_context",
    "main",
    "verify_history",
]
