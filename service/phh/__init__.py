"""Export a Guts hand history as PHH, the open poker hand-history format (TOML).

PHH (github.com/uoftcprg/phh-std) describes a hand by required fields (``variant``, ``antes``,
``blinds_or_straddles``, ``min_bet``, ``starting_stacks``, ``actions``), optional standard
fields (``hand``, ``table``, ``seats``, ``players``, ``time``, ``winnings``, ...) and custom
fields whose names start with ``_`` (other parsers ignore them). ``to_phh(history)`` turns the
JSON of GET /v1/tables/{table_id}/hands/{hand} into such a file. The TOML is written by hand
(no dependency) and parses with ``tomllib``.

Guts is not a PHH variant, so the mapping takes these decisions (assumptions, stated once):

* ``variant = "NT"`` (no-limit Texas hold 'em). It is the closest PHH variant: a button game
  of hole cards, high hands win, antes allowed, and its required fields are exactly those
  above. Guts has no board and no betting, so a PHH replayer (e.g. PokerKit) cannot replay the
  actions as hold 'em; ``_guts_variant`` says what the game really was. Readers must look at
  ``_guts_*`` for the Guts rules.
* Players ``p1`` .. ``pN`` are the seats of ``order`` in that order (the declaring order, from
  the button's left; the dealer is last), which is also the dealing order PHH expects.
  ``seats`` holds their 1-based seat numbers and ``_guts_seats`` the service's 0-based ones.
* ``blinds_or_straddles`` is all zeros. ``antes`` are the antes each player paid this hand
  (zeros when the pot carried over); with two players the array is reversed, as PHH reverses
  forced bets heads-up; ``_guts_antes`` keeps them in player order. ``min_bet`` is the table
  ante given as ``ante=``, else the largest ante paid this hand, else 1 (PHH wants a positive
  number; the history does not carry the table's rules).
* ``starting_stacks``: the history does not carry stacks. Pass ``starting_stacks={seat: chips}``
  to fill them in (``finishing_stacks`` is then computed: start - ante - match - wimp + won);
  otherwise each is ``inf``, PHH's notation for an unknown stack.
* Actions: ``d dh pN <cards>`` deals each hand (all of a player's cards in one action, in the
  order dealt). Unknown cards are ``??`` per card (so ``??????`` for three cards; the
  ``????`` of hold 'em examples is two unknown cards). A declaration "in" is ``pN cc`` (a
  check: there is nothing to call) and "out" is ``pN f`` (a fold), each with a commentary
  (``# in``, ``# out: timed out``, ...) in the order the decisions were made. At the showdown,
  each shown hand is ``pN sm <cards>``; a player who stayed in without showing (a lone winner)
  is ``pN sm ??????`` ("neither mucked nor shown" in PHH). The kitty is not a PHH player: its
  deal and showing are no-op commentaries (``# kitty dealt ...``), as are the settlement, a
  wimp-penalty showing and a void.
* Other house rules: a community card is ``d db <card>`` after the declarations; a draw is
  ``pN sd <discards>`` (``pN sd`` to stand pat) followed by ``d dh pN <drawn>``, with ``??``
  for the cards this viewer may not see (their number is public); pass the trash, which PHH
  has no action for, is a commentary per pass (``# p1 passes Ks to p2``) and ``_guts_passes``.
  In a hi-lo game "high", "low" and "both" are all ``cc`` with the choice as commentary, and
  the low pot's result is in ``_guts_low_*`` (``winnings`` adds both pots).
* A betting round (``betting_round``) is written as PHH betting actions after the draws, in
  the order made: a check or a call is ``pN cc``, a bet or a raise ``pN cbr <to>`` (the
  round's new total, as PHH's "complete, bet or raise to"), a fold ``pN f``, each with the
  Guts action as commentary; a folder is not shown at the showdown. ``_guts_bets`` has each
  player's chips bet and ``_guts_folded`` the folders (who still match: ``_guts_matched``);
  ``finishing_stacks`` subtracts the bets.
* ``winnings`` is what each player took from the pot and side pot; the other amounts (matches,
  wimp penalties, pot, reserve and side pot before and after) are ``_guts_*`` fields, as are the
  fairness data (commitment, seed, client seed, deck context, stacked, reshuffled).
"""

from __future__ import annotations

from .export import GUTS_VARIANT, PHH_VARIANT, to_phh

__all__ = ["GUTS_VARIANT", "PHH_VARIANT", "to_phh"]
