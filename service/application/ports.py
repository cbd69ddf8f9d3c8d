"""What the use cases need of the world outside the tables, as Protocols: the application
names no Redis, RQ or PostgreSQL (an import contract holds it to that), and the composition
root (`service.infrastructure`, the API's factory, the dispatcher's builder) hands it the
stores that implement these.

| port | implemented by |
|---|---|
| `Jobs` | `service.audit.jobs.QueuedJobs` (records in Redis, jobs in RQ) |
| `HandArchive` | `service.archive.archive.Archive` (PostgreSQL) |
| `Catcher` | `service.projections.follower.Follower` |
| `LedgerBook` | `service.projections.ledger.LedgerStore`, `service.archive.ledger.ArchiveLedger` |
| `WebhookRegistry` | `service.projections.webhooks.WebhookStore` |
| `DispatcherVitals` | `service.eventlog.vitals.Vitals` (heartbeats, archive lag, lateness) |
| `QuarantineList` | `service.eventlog.due_index.DueIndex` |
| `WalletBook` | `service.projections.wallet_calls.Wallet` |
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from service.eventlog.store import StoredEvent
from service.eventlog.vitals import ArchiveLag, Beats
from service.rules.limits import Limits


class Jobs(Protocol):
    """Audits and collusion reports: their records, and their jobs queued once each."""

    def audit_record(self, audit_id: str) -> dict[str, Any] | None: ...

    def start_audit(self, audit_id: str, table_id: str) -> None: ...

    def audit_failed(self, audit_id: str) -> bool: ...

    def report_record(self, report_id: str) -> dict[str, Any] | None: ...

    def start_report(self, report_id: str, record: dict[str, Any]) -> None: ...

    def report_failed(self, report_id: str) -> bool: ...


class HandArchive(Protocol):
    """Finished hands, searchable, and their events (the archive)."""

    def hands(
        self,
        *,
        tenant: str | None,
        player_id: str | None = None,
        table_id: str | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        after: str | None = None,
        limit: int = 20,
    ) -> tuple[list[Any], str | None]: ...

    def hand_events(
        self, hands: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], list[StoredEvent]]: ...


class Catcher(Protocol):
    """Brings a table's projections up to its log (a follower)."""

    def safely_catch_up(self, table_id: str, upto: int | None = None) -> int: ...


class LedgerBook(Protocol):
    """The ledger's entries and the players' limits, per tenant."""

    def page(
        self,
        tenant: str,
        after: str | None,
        limit: int,
        *,
        table_id: str | None = None,
        player_id: str | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]: ...

    def net_loss(self, tenant: str, player_id: str, now_ms: int) -> int: ...

    def net_losses(self, tenant: str, player_ids: Sequence[str], now_ms: int) -> dict[str, int]: ...

    def limits(self, tenant: str, player_ids: Sequence[str]) -> tuple[dict[str, Limits], str]: ...

    def set_limits(
        self,
        tenant: str,
        player_id: str,
        limits: Limits,
        outbox: dict[str, Any] | None = None,
    ) -> None: ...

    def outbox(self, tenant: str | None = None) -> list[tuple[str, str, dict[str, Any]]]: ...

    def applied(self, tenant: str, player_id: str, entry: dict[str, Any]) -> bool: ...

    def cool_down(self, tenant: str, player_id: str, until: str) -> None: ...

    def cool_down_until(self, tenant: str, player_id: str) -> str | None: ...

    def seating(
        self, tenant: str, player_id: str, also: Any = None
    ) -> tuple[Limits | None, str, str | None]:
        """The player's limits set (None: none), the tenant's profile and the end of the
        player's cool-down, in one round trip; `also`, another store's step made to be
        carried (as `WalletBook.carry_debit`'s), goes in the same round trip."""
        ...

    def profile(self, tenant: str) -> str: ...

    def set_profile(self, tenant: str, profile: str) -> None: ...


class WebhookRegistry(Protocol):
    """A tenant's webhooks and their deliveries."""

    def register(self, tenant: str, url: str, events: Sequence[str]) -> dict[str, Any]: ...

    def hooks(self, tenant: str) -> dict[str, dict[str, Any]]: ...

    def hook(self, tenant: str, webhook_id: str) -> dict[str, Any] | None: ...

    def delete(self, tenant: str, webhook_id: str) -> bool: ...

    def deliveries(
        self, tenant: str, webhook_id: str, after: int, limit: int
    ) -> tuple[list[dict[str, Any]], int]: ...

    def delivery(self, tenant: str, delivery_id: str) -> dict[str, Any] | None: ...

    def redeliver(self, tenant: str, delivery_id: str) -> dict[str, Any] | None: ...


class DispatcherVitals(Protocol):
    """What the dispatchers tell every API node of themselves (for /readyz and /metrics)."""

    alive_s: float
    """A dispatcher is alive when it beat within this many seconds."""
    lag_fresh_s: float
    """The archive's lag is known when it was measured within this many seconds."""

    def beats(self, now: float | None = None) -> Beats: ...

    def archive_lag(self, now: float | None = None) -> ArchiveLag: ...

    def lateness(self) -> tuple[list[tuple[str, float]], float, float]: ...


class QuarantineList(Protocol):
    """The tables set aside because something stored about them does not load or parse."""

    def quarantined(self) -> dict[str, dict[str, Any]]: ...


class WalletBook(Protocol):
    """A tenant's casino wallet: its settings, its transactions, and the debits' calls."""

    seat_request: str
    """The request hash a wallet-funded seat or top-up is appended with."""

    def settings(self, tenant: str) -> dict[str, Any] | None: ...

    def put_settings(
        self, tenant: str, url: str, currency: str, chip_value_minor: int
    ) -> tuple[dict[str, Any], bool]: ...

    def rotate_secret(self, tenant: str) -> dict[str, Any] | None: ...

    def delete_settings(self, tenant: str) -> bool: ...

    def page(
        self, tenant: str, after: int, limit: int, match: dict[str, str]
    ) -> tuple[list[dict[str, Any]], int | None]: ...

    def transaction(self, tenant: str, key: str) -> dict[str, Any] | None: ...

    def seat_key(self, transaction_id: str) -> str: ...

    def carry_debit(self, tenant: str, make: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
        """The debit `make` makes, to be recorded by another store's round trip (as
        `LedgerBook.seating`'s `also`); None when it cannot be."""
        ...

    def begin_debit(
        self, tenant: str, make: Callable[[dict[str, Any]], dict[str, Any]], carried: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any], bool] | None: ...

    def withdraw(self, tenant: str, record: dict[str, Any]) -> None: ...

    def resume(self, tenant: str, record: dict[str, Any]) -> dict[str, Any] | None: ...

    def send_debit(
        self, tenant: str, record: dict[str, Any], settings: dict[str, Any] | None = None
    ) -> Callable[[], str]: ...

    def roll_back(self, tenant: str, transaction_id: str) -> str: ...
