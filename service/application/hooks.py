"""The webhook use cases: a casino's operator registers, lists and deletes its webhooks, pages
a webhook's deliveries and asks for one again (`service.projections.webhooks` keeps them).
Webhooks are the tenant's operational settings: operators only; another tenant's are not
found."""

from __future__ import annotations

from typing import Any

from service.rules.views import OPERATOR

from .access import DEFAULT_TENANT, Caller, require
from .errors import Forbidden, WebhookNotFound
from .ports import WebhookRegistry
from .values import Outcome, Subject


class WebhookUses:
    """The webhook use cases (mixed into `TableService`, which provides `webhooks`)."""

    webhooks: WebhookRegistry | None

    def _hooks(self, caller: Caller) -> tuple[WebhookRegistry, str]:
        require(caller, OPERATOR)
        if self.webhooks is None:
            raise Forbidden("this service keeps no webhooks")
        return self.webhooks, caller.tenant or DEFAULT_TENANT

    def register_webhook(self, caller: Caller, url: str, events: list[str]) -> Outcome:
        """A new webhook of the caller's tenant; the answer is the only one with its secret."""
        hooks, tenant = self._hooks(caller)
        record = hooks.register(tenant, url, events)  # (InvalidCommand naming the field)
        return Outcome("made", record, subject=Subject("webhook", record["webhook_id"]))

    def list_webhooks(self, caller: Caller) -> Outcome:
        """The tenant's webhooks, oldest first, without their secrets."""
        hooks, tenant = self._hooks(caller)
        found = sorted(
            hooks.hooks(tenant).values(), key=lambda h: (h["created_at"], h["webhook_id"])
        )
        return Outcome("found", {"webhooks": [_without_secret(h) for h in found]})

    def delete_webhook(self, caller: Caller, webhook_id: str) -> Outcome:
        """Remove a webhook: nothing more is delivered to it."""
        hooks, tenant = self._hooks(caller)
        if not hooks.delete(tenant, webhook_id):
            raise WebhookNotFound(f"no webhook {webhook_id!r}"[:80])
        return Outcome("removed", None)

    def webhook_deliveries(
        self, caller: Caller, webhook_id: str, after: int, limit: int
    ) -> Outcome:
        """A page of a webhook's deliveries, oldest first (status, attempts, the last answer)."""
        hooks, tenant = self._hooks(caller)
        if hooks.hook(tenant, webhook_id) is None:
            raise WebhookNotFound(f"no webhook {webhook_id!r}"[:80])
        page, cursor = hooks.deliveries(tenant, webhook_id, after, limit)
        return Outcome("found", {"deliveries": page, "next_after": cursor})

    def redeliver(self, caller: Caller, webhook_id: str, delivery_id: str) -> Outcome:
        """Attempt a delivery again now (a dead one comes back to life for another
        `retry_for_s`)."""
        hooks, tenant = self._hooks(caller)
        record = hooks.delivery(tenant, delivery_id) if hooks.hook(tenant, webhook_id) else None
        if record is None or record["webhook_id"] != webhook_id:
            raise WebhookNotFound(f"no delivery {delivery_id!r} of webhook {webhook_id!r}"[:120])
        again = hooks.redeliver(tenant, delivery_id)
        assert again is not None
        return Outcome("started", {k: v for k, v in again.items() if k != "body"})


def _without_secret(hook: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in hook.items() if k != "secret"}
