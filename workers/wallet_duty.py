"""The wallet duty of a dispatcher: finish the casino wallets' pending transactions that came
due (``service.projections.wallet_calls``): a debit whose sender did not finish it within its
grace (confirmed if its seat was appended, else rolled back), a rollback or a credit whose
next attempt is due. Each is claimed for `LEASE_S` before it is worked on, so a dispatcher
killed mid-call leaves it to come due again; any number of dispatchers may run it.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from service.eventlog.redis_errors import redis_away
from service.projections.broken_tenants import BrokenTenants
from service.projections.wallet_calls import CLAIM_LEASE_S, Wallet
from workers.duty import run_duty

log = logging.getLogger("guts.wallet")
LEASE_S = CLAIM_LEASE_S
CALLERS = 16
"""Calls made at once (a slow wallet holds a caller for its timeout)."""


def finish_due(
    wallet: Wallet,
    pool: ThreadPoolExecutor,
    batch: int = CALLERS,
    broken: BrokenTenants | None = None,
) -> int:
    """Claim and finish every tenant's due transactions (up to `batch` each, one call each at
    once: a tenant whose wallet takes its whole timeout holds the tenants after it for one
    timeout, not one per `CALLERS` of its transactions; the next pass takes the rest); how
    many. A tenant whose transactions cannot be claimed (its keys written outside the service)
    is passed over (`broken` names it): it holds up no other."""
    wallet.hasten_again()
    broken = broken or BrokenTenants("wallet", log)
    return broken.each(wallet.store.tenants(), lambda t: _finish_tenant(wallet, pool, t, batch))


def _finish_tenant(wallet: Wallet, pool: ThreadPoolExecutor, tenant: str, batch: int) -> int:
    due = wallet.store.due(tenant, LEASE_S, batch)
    for failed in pool.map(_finish, [wallet] * len(due), [tenant] * len(due), due):
        if failed is not None:
            log.error("wallet transaction %s: %s", *failed)
    return len(due)


def _finish(wallet: Wallet, tenant: str, record: dict[str, Any]) -> tuple[str, str] | None:
    """Finish one transaction; what went wrong (it comes due again after its lease)."""
    try:
        wallet.finish(tenant, record)
    except Exception as error:  # noqa: BLE001 - one transaction never stops the others
        if redis_away(error):  # (away, failing over, refusing writes: the duty waits)
            raise
        return record.get("transaction_id", "?"), f"{type(error).__name__}: {error}"[:200]
    return None


def run_wallet_duty(wallet: Wallet, stop: threading.Event, idle_s: float = 0.2) -> None:
    """Finish due transactions until `stop` (a thread of the dispatcher: `run_duty`)."""
    broken = BrokenTenants("wallet", log)
    with ThreadPoolExecutor(CALLERS, thread_name_prefix="wallet") as pool:

        def one_pass() -> float:
            return 0.0 if finish_due(wallet, pool, broken=broken) else idle_s  # (busy: at once)

        run_duty("wallet", one_pass, stop, log)
