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

import redis

from service.eventlog.redis_errors import redis_away
from service.pacing import REDIS_AWAY
from service.projections.wallet_calls import CLAIM_LEASE_S, Wallet
from workers.tenants import BrokenTenants

log = logging.getLogger("guts.wallet")
LEASE_S = CLAIM_LEASE_S
CALLERS = 16
"""Calls made at once (a slow wallet holds a caller for its timeout)."""


def finish_due(
    wallet: Wallet, pool: ThreadPoolExecutor, batch: int = 500, broken: BrokenTenants | None = None
) -> int:
    """Claim and finish every tenant's due transactions (up to `batch` each); how many. A
    tenant whose transactions cannot be claimed (its keys written outside the service) is
    passed over (`broken` names it): it holds up no other."""
    wallet.hasten_again()
    done = 0
    for tenant in wallet.store.tenants():
        try:
            due = wallet.store.due(tenant, LEASE_S, batch)
        except Exception as error:
            if redis_away(error):
                raise
            (broken or BrokenTenants("wallet", log)).name(tenant, error)
            continue
        done += len(due)
        for failed in pool.map(_finish, [wallet] * len(due), [tenant] * len(due), due):
            if failed is not None:
                log.error("wallet transaction %s: %s", *failed)
    return done


def _finish(wallet: Wallet, tenant: str, record: dict[str, Any]) -> tuple[str, str] | None:
    """Finish one transaction; what went wrong (it comes due again after its lease)."""
    try:
        wallet.finish(tenant, record)
    except (redis.ConnectionError, redis.TimeoutError):
        raise
    except Exception as error:  # noqa: BLE001 - one transaction never stops the others
        return record.get("transaction_id", "?"), f"{type(error).__name__}: {error}"[:200]
    return None


def run_wallet_duty(wallet: Wallet, stop: threading.Event, idle_s: float = 0.2) -> None:
    """Finish due transactions until `stop` (a thread of the dispatcher), waiting out Redis
    going away. Nothing else ends it: a thread that died would leave every tenant's credits
    and rollbacks waiting, and the dispatcher running on without a word of it."""
    failures, broken = 0, BrokenTenants("wallet", log)
    with ThreadPoolExecutor(CALLERS, thread_name_prefix="wallet") as pool:
        while not stop.is_set():
            try:
                busy = finish_due(wallet, pool, broken=broken) > 0
                failures, wait = 0, (0.0 if busy else idle_s)
            except Exception as error:  # noqa: BLE001 - its thread outlives it
                failures += 1
                wait = REDIS_AWAY.delay(failures)
                if redis_away(error):  # (a failover: CLUSTERDOWN, TRYAGAIN, READONLY...)
                    log.warning("wallet: Redis unreachable (%s)", type(error).__name__)
                else:  # a bug, or a value no check foresaw: tried again after the wait
                    log.exception("wallet: finishing the due transactions failed")
            stop.wait(wait)
