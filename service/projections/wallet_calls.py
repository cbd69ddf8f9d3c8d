"""The casino wallet's money movements, each call recorded before and after it is made: the
application's port (`service.application.ports.WalletBook`) and the wallet duty's tool.

- `send_debit` (`debit`: and wait for its answer): send a pending debit; `ok` leaves it pending
  for its seat's append (the wallet's projection confirms it), a refusal settles it `refused`,
  anything else rolls it back.
- `roll_back`: decide the debit's fate on its table (`WalletStore.claim_rollback`): its seat
  was appended, so it is confirmed; else it is `rolled_back` and a rollback transaction is
  recorded and sent, until the wallet takes it (200).
- `attempt`: one attempt of a pending rollback or credit; a credit not taken is retried with
  backoff for `WalletSchedule.credit_for_s`, then `failed` for a person to settle.
- `finish`: what the wallet duty does with a transaction that came due (its sender died, or
  its retry is due).

Every record changes by one conditional write (`WalletStore.settle`): two processes finishing
one transaction cannot both change it, and each re-reads and decides again when it lost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from typing import Any, Protocol

from service.projections.wallet import (
    KEEP,
    SEAT_REQUEST,
    CarriedDebit,
    Due,
    WalletStore,
    record_key,
    seat_key,
)
from service.projections.wallet_messages import Answer, WalletSchedule
from service.projections.wallet_messages import send as send_call
from service.projections.wallet_records import SettingsChanged, opened
from service.rules import wallet as w

log = logging.getLogger("guts.wallet")
CLAIM_LEASE_S = 30.0
"""How long a transaction the wallet duty claimed is its claimant's before it comes due again
(longer than a call's timeout and its recording)."""

Make = Callable[[dict[str, Any]], dict[str, Any]]
"""A debit's record made of the tenant's wallet settings."""


class Send(Protocol):
    """How a call is sent (`service.projections.wallet_messages.send`): calling what it
    returns waits for the answer."""

    def __call__(
        self,
        url: str,
        path: str,
        secret: str,
        payload: dict[str, Any],
        timeout_s: float,
        *,
        private_ok: bool = False,
    ) -> Callable[[], Answer]: ...


Observe = Callable[[str, str, float], None]
"""Told of each call made: its path (``debit``, ``credit``, ``rollback``), its outcome
(``ok``, ``refused``: another of the contract's answers, ``unknown``) and its seconds."""
Change = Callable[[dict[str, Any]], "tuple[dict[str, Any], Due] | None"]
"""A change of a record: the changes and when it is due next, or None: leave it as it is."""

_PAYLOAD = ("transaction_id", "player_id", "table_id", "amount", "currency", "reason")
_ROLLBACK_PAYLOAD = ("transaction_id", "player_id", "amount", "currency")


class Wallet:
    """The wallet's records (`store`) and calls (`send`, paced by `schedule`)."""

    seat_request = SEAT_REQUEST

    def __init__(
        self, store: WalletStore, schedule: WalletSchedule | None = None, send: Send = send_call
    ) -> None:
        self.store = store
        self.schedule = schedule or WalletSchedule()
        self.send = send
        self.on_call: Observe = _unobserved  # (the API's /metrics sets it)
        # what the application reads and sets goes straight to the store
        self.settings = store.settings
        self.put_settings = store.put_settings
        self.rotate_secret = store.rotate_secret
        self.delete_settings = store.delete_settings
        self.page = store.page
        self.transaction = store.transaction
        self._settings: dict[str, dict[str, Any]] = {}  # each tenant's, as last used here
        self._hastened: dict[str, float] = {}  # when each tenant's retries were last hastened
        self._again: dict[str, float] = {}  # when to hasten each tenant's once more

    @staticmethod
    def seat_key(transaction_id: str) -> str:
        return seat_key(transaction_id)

    # --- debits ------------------------------------------------------------------------------

    def open_debit(self, tenant: str, record: dict[str, Any]) -> dict[str, Any]:
        """Record the debit, pending; the duty finishes it if its sender has not within the
        grace. The record kept for the same transaction before, if any."""
        return self.store.open(tenant, record, self._now() + self.schedule.debit_grace_s)

    def carry_debit(self, tenant: str, make: Make) -> CarriedDebit | None:
        """The debit `make` makes of the tenant's wallet settings as this process last used
        them, to be recorded (pending, as `open_debit`; the settings checked) by a round
        trip of another store (`Carried`), then handed to `begin_debit`; None when this
        process knows no settings of the tenant yet."""
        settings = self._settings.get(tenant)
        if settings is None:
            return None
        due = self._now() + self.schedule.debit_grace_s
        return CarriedDebit(self.store, tenant, make(settings), due, settings)

    def begin_debit(
        self, tenant: str, make: Make, carried: CarriedDebit | None = None
    ) -> tuple[dict[str, Any], dict[str, Any], bool] | None:
        """Record the debit `make` makes of the tenant's wallet settings, pending (as
        `open_debit`), in one round trip when this process knows the settings: they are
        checked in the same step, and read again when they changed; in none when `carried`
        (`carry_debit`'s) was recorded by another round trip with the settings unchanged.
        The record (the one kept for the same transaction before, if any), the settings it
        was made with, and whether it is new; None: the tenant has no wallet."""
        settings = carried.settings if carried else None
        settings = settings or self._settings.get(tenant) or self.store.settings(tenant)
        for _ in range(3):
            if settings is None:
                self._settings.pop(tenant, None)
                return None
            record = carried.record if carried else make(settings)
            due = self._now() + self.schedule.debit_grace_s
            try:
                if carried is not None and carried.replies:
                    kept = opened(carried.replies[0])
                else:
                    kept = self.store.open_as_set(tenant, record, due, settings)
            except SettingsChanged as changed:
                settings, carried = changed.settings, None
                continue
            self._settings[tenant] = settings
            return (record, settings, True) if kept is None else (kept, settings, False)
        self._settings.pop(tenant, None)  # (changed on every try: as read, unchecked)
        settings = self.store.settings(tenant)
        if settings is None:
            return None
        record = make(settings)
        kept = self.open_debit(tenant, record)
        return kept, settings, kept is record

    def withdraw(self, tenant: str, record: dict[str, Any]) -> None:
        """The debit this request recorded (`record`, new) will not be sent: the rules or
        the protections refused its seat. It is forgotten, unless another request with the
        same transaction took it on meanwhile (`resume`), or the duty did: then it is
        rolled back (its seat's key claimed, so that no seat lands for it)."""
        if not self.store.withdraw(tenant, record):
            self.roll_back(tenant, record["transaction_id"])

    def resume(self, tenant: str, record: dict[str, Any]) -> dict[str, Any] | None:
        """Take on a pending debit an earlier request with the same transaction recorded
        (`record`, as read), before sending it again: from now on that request cannot
        `withdraw` it. The record after; None when it was withdrawn first (record it anew)."""
        resumed = {"resumed": int(record.get("resumed", 0)) + 1}
        while record["status"] == w.PENDING:
            written = self.store.settle(tenant, record, resumed, KEEP)
            if written is not None:
                return written
            found = self.store.transaction(tenant, record["transaction_id"])
            if found is None:
                return None
            record = found
        return record

    def debit(
        self, tenant: str, record: dict[str, Any], settings: dict[str, Any] | None = None
    ) -> str:
        """Send the debit and wait for its answer (`send_debit`): its status after."""
        return self.send_debit(tenant, record, settings)()

    def send_debit(
        self, tenant: str, record: dict[str, Any], settings: dict[str, Any] | None = None
    ) -> Callable[[], str]:
        """Send the debit (with the tenant's `settings`, when the caller has them). Calling what
        is returned waits for the answer and gives the debit's status after: pending when the
        wallet took it (append the seat, and nothing else: the wallet's projection confirms
        the debit once it follows the seat, `WalletCredits`). The answer is read and recorded
        once, however often it is called; the caller must call it, and works meanwhile."""
        answered = self._send(tenant, "debit", record, _PAYLOAD, settings)

        @cache
        def status() -> str:
            answer = answered()
            if answer.status == "ok":
                return w.PENDING
            txid = record["transaction_id"]
            if answer.status is not None:
                refused = {"status": w.REFUSED, "answer": answer.status}
                return str(self._change(tenant, txid, _attempted(refused, None))["status"])
            self._change(tenant, txid, _attempted({"problem": answer.problem}, KEEP))
            log.warning("debit %s: unknown outcome (%s)", txid, answer.problem)
            return self.roll_back(tenant, txid)

        return status

    def roll_back(self, tenant: str, transaction_id: str) -> str:
        """Roll the debit back unless its seat was appended; its status after."""
        debit = self.store.transaction(tenant, transaction_id)
        if debit is None or debit["status"] != w.PENDING:
            return "" if debit is None else str(debit["status"])
        if not self.store.claim_rollback(debit["table_id"], transaction_id):
            seated = _pending_to({"status": w.CONFIRMED})
            return str(self._change(tenant, transaction_id, seated)["status"])
        kept = self._change(tenant, transaction_id, _pending_to({"status": w.ROLLED_BACK}))
        fields = {k: debit[k] for k in ("transaction_id", "player_id", "table_id", "chips")}
        money = {k: debit[k] for k in ("currency", "chip_value_minor")}
        reason = w.REFUND
        now = datetime.fromtimestamp(self._now(), UTC)
        rollback = w.new_transaction(w.ROLLBACK, reason, now, **fields, **money)
        self.attempt(tenant, self.store.open(tenant, rollback, self._now()))
        return str(kept["status"])

    # --- rollbacks and credits ---------------------------------------------------------------

    def attempt(self, tenant: str, record: dict[str, Any]) -> None:
        """One attempt of a pending rollback or credit, recorded."""
        if record["status"] != w.PENDING:
            return
        fields = _ROLLBACK_PAYLOAD if record["kind"] == w.ROLLBACK else _PAYLOAD
        answer = self._send(tenant, record["kind"], record, fields)()
        key = record_key(record)
        if answer.status == "ok":
            self._change(tenant, key, _attempted({"status": w.CONFIRMED}, None))
            if record["attempts"]:  # it failed before: the wallet is back
                self._back(tenant)
            return
        problem = answer.problem or f"the wallet answered {answer.status}"
        self._change(tenant, key, self._retry(problem))

    def finish(self, tenant: str, record: dict[str, Any]) -> None:
        """What the wallet duty does with a transaction that came due."""
        if record["kind"] == w.DEBIT:
            self.roll_back(tenant, record["transaction_id"])
        else:
            self.attempt(tenant, record)

    def _retry(self, problem: str) -> Change:
        schedule, now = self.schedule, self._now()

        def change(record: dict[str, Any]) -> tuple[dict[str, Any], Due] | None:
            if record["status"] != w.PENDING:
                return None
            attempts = record["attempts"] + 1
            first = record.get("first_attempt_at") or now
            base = {"attempts": attempts, "problem": problem, "first_attempt_at": first}
            if record["kind"] == w.CREDIT and now - first >= schedule.credit_for_s:
                return {**base, "status": w.FAILED}, None
            return base, now + schedule.wait_after(attempts)

        return change

    HASTEN_EVERY_S = 5.0
    """How often (at most) this process brings a tenant's waiting retries forward."""

    def _back(self, tenant: str) -> None:
        """The tenant's wallet answered a retried call: its other retries need not wait out
        their backoff (`WalletStore.hasten`; once per `HASTEN_EVERY_S` here), nor those whose
        calls were under way as it came back, which fail and wait after this pass: once more
        when a call's timeout has passed (`hasten_again`)."""
        now = self._now()
        if now - self._hastened.get(tenant, float("-inf")) < self.HASTEN_EVERY_S:
            return
        self._hastened[tenant] = now
        self._again[tenant] = now + self.schedule.timeout_s + 1.0
        self._hasten(tenant)

    def hasten_again(self) -> None:
        """The second pass of `_back` for each tenant whose moment came (the wallet duty
        calls this on each round)."""
        now = self._now()
        for tenant, at in list(self._again.items()):
            if now >= at:
                self._again.pop(tenant, None)
                self._hasten(tenant)

    def _hasten(self, tenant: str) -> None:
        moved = self.store.hasten(tenant, CLAIM_LEASE_S)
        if moved:
            log.info("wallet of %s answers again: %d retries brought forward", tenant, moved)

    # --- the records ----------------------------------------------------------------------------

    def _send(
        self,
        tenant: str,
        path: str,
        record: dict[str, Any],
        fields: tuple[str, ...],
        settings: dict[str, Any] | None = None,
    ) -> Callable[[], Answer]:
        """The call sent; calling what is returned waits for its answer (observed once)."""
        settings = settings or self.store.settings(tenant)
        if settings is None:
            unset = Answer(None, problem="the tenant has no wallet settings")
            return lambda: unset
        payload = {k: record[k] for k in fields}
        url, secret = settings["url"], settings["secret"]
        started = time.perf_counter()
        timeout_s, private_ok = self.schedule.timeout_s, self.store.private_ok
        sent = self.send(url, path, secret, payload, timeout_s, private_ok=private_ok)

        @cache
        def answer() -> Answer:
            answered = sent()
            self.on_call(path, _outcome_of(answered), time.perf_counter() - started)
            return answered

        return answer

    def _change(
        self, tenant: str, key: str, change: Change, known: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Apply `change` to the record under `key` (first to `known`, the record as the
        caller last saw it) by a conditional write, reading it again whenever another process
        wrote it first; the record as it is then."""
        while True:
            record, known = known or self.store.transaction(tenant, key), None
            if record is None:
                raise KeyError(key)
            made = change(record)
            if made is None:
                return record
            changes, due = made
            written = self.store.settle(tenant, record, changes, due)
            if written is not None:
                return written

    def _now(self) -> float:
        return self.store.clock()


def _outcome_of(answer: Answer) -> str:
    """A call's outcome as `Observe` is told it."""
    if answer.status is None:
        return "unknown"
    return "ok" if answer.status == "ok" else "refused"


def _unobserved(path: str, outcome: str, seconds: float) -> None:
    pass


def _pending_to(changes: dict[str, Any]) -> Change:
    """Finish a pending record with `changes` (one finished already stays as it is)."""

    def change(record: dict[str, Any]) -> tuple[dict[str, Any], Due] | None:
        if record["status"] != w.PENDING:
            return None
        return changes, None

    return change


def _attempted(changes: dict[str, Any], due: Due) -> Change:
    """Count an attempt of a pending record, changed by `changes` (due next at `due`)."""

    def change(record: dict[str, Any]) -> tuple[dict[str, Any], Due] | None:
        if record["status"] != w.PENDING:
            return None
        return {**changes, "attempts": record["attempts"] + 1}, due

    return change
