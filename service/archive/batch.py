"""One batch of a table's events as the archive copies it: each event checked against the hash
chain, the ledger's entries it makes, and the rows of the hands it finishes
(`service.archive.archive` writes them in the transaction that moves the position).
"""

from __future__ import annotations

from typing import Any

import orjson
from psycopg.types.json import Jsonb

from service.eventlog.codec import chain_hash, upcast
from service.eventlog.store import CorruptLog
from service.rules import events as ev
from service.rules import ledger
from service.rules.times import parse_iso

_DECODED = ledger.MONEY_EVENTS | {ev.HandDealt.TYPE, ev.HandResolved.TYPE, ev.HandVoided.TYPE}
"""The event types a batch decodes (the others need only their hash checked)."""


class CopiedBatch:
    """The events of one batch checked against the hash chain, and the hands they finish."""

    def __init__(
        self,
        table_id: str,
        tenant: str,
        head: str,
        open_hand: dict[str, Any] | None,
        book: ledger.Book,
    ) -> None:
        self.table_id = table_id
        self.tenant = tenant
        self.head = head
        self.open_hand = open_hand
        self.book = book
        self.hands: list[tuple[Any, ...]] = []
        self.entries: list[ledger.Entry] = []

    def add(self, version: int, raw: bytes) -> None:
        try:
            record = orjson.loads(raw)
            if not isinstance(record, dict) or chain_hash(self.head, record) != record["hash"]:
                raise ValueError("its hash does not chain from the event before it")
            self.head = record["hash"]
            if record["type"] == ev.DecisionMade.TYPE:
                self._declared(record["data"])
            elif record["type"] in _DECODED:  # (the others need only their hash checked)
                event = ev.event_from_data(upcast(record))
                self.book, made = ledger.step(self.book, version, event)
                self.entries += made
                if isinstance(event, ev.HandDealt | ev.HandResolved | ev.HandVoided):
                    self._hand_event(version, event)
        except (KeyError, TypeError, ValueError) as error:  # orjson's and the codec's too
            raise CorruptLog(
                f"table {self.table_id!r}: event {version} cannot be archived ({error})"
            ) from error

    def _declared(self, data: dict[str, Any]) -> None:
        """Remember how long after the deal a player declared (the collusion report's timing;
        read from the record, with no event built: these are most of a log)."""
        hand = self.open_hand
        if hand is None or data.get("by") != "player" or hand.get("hand") != data.get("hand"):
            return
        player = hand["seats"].get(str(data["seat"]))
        if player:
            after = (parse_iso(data["at"]) - parse_iso(hand["at"])).total_seconds()
            hand.setdefault("declared", {})[player] = round(after, 3)

    def _hand_event(self, version: int, event: ev.Event) -> None:
        if isinstance(event, ev.HandDealt):
            seats = {str(seat): event.players.get(seat, "") for seat in sorted(event.cards)}
            self.open_hand = {"hand": event.hand, "first": version, "at": event.at, "seats": seats}
            return
        assert isinstance(event, ev.HandResolved | ev.HandVoided)
        dealt = self.open_hand if (self.open_hand or {}).get("hand") == event.hand else None
        named: dict[str, str] = (dealt or {}).get("seats", {})
        won: dict[str, int] = {}
        paid: dict[str, int] = {}
        ins: list[str] = []
        if isinstance(event, ev.HandResolved):
            low = event.low
            winners = [named.get(str(seat), "") for seat in event.winners]
            outcome = event.outcome
            pot = event.pot_in_play + (low.pot_in_play if low else 0)
            rake = event.rake + (low.rake if low else 0)
            ins = [named.get(str(seat), "") for seat in event.in_seats]
            moves = [(won, event.won), (paid, event.matched), (paid, event.wimp)]
            if low is not None:
                moves += [(won, low.won), (paid, low.matched)]
            for into, amounts in moves:
                for seat, amount in amounts.items():
                    player = named.get(str(seat), "")
                    into[player] = into.get(player, 0) + amount
        else:
            winners, outcome, pot, rake = [], "voided", 0, 0
        self.hands.append(
            (
                self.tenant,
                self.table_id,
                event.hand,
                dealt["first"] if dealt else version,
                version,
                parse_iso(dealt["at"] if dealt else event.at),
                parse_iso(event.at),
                sorted(set(named.values())),
                winners,
                outcome,
                pot,
                rake,
                ins,
                Jsonb(won),
                Jsonb(paid),
                Jsonb((dealt or {}).get("declared", {})),
            )
        )
        self.open_hand = None
