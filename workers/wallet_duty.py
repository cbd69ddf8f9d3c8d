"""The wallet duty of a dispatcher: finish the casino wallets' pending transactions that came
due (``service.projections.wallet_calls``): a debit whose sender did not finish it within its
grace (confirmed if its seat was appended, else rolled back), a rollback or a credit whose
next attempt is due. Each is claimed for `LEASE_S` before it is worked on, so a dispatcher
killed mid-call leaves it to come due again; any number of dispatchers may run it.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis

from service.eventlog.redis_errors import redis_away
from service.pacing import REDIS_AWAY
from service.projections.wallet_calls import CLAIM_LEASE_S, Wallet

log = logging.getLogger("guts.wallet")
LEASE_S = CLAIM_LEASE_S
CALLERS = 16
BROKEN_NAMED_EVERY_S = 60.0
"""How often a tenant whose transactions cannot be claimed is named again in the log."""
"""Calls made at once (a slow wallet holds a caller for its timeout)."""


def finish_due(wallet: Wallet, pool: ThreadPoolExecutor, batch: int = 500) -> int:
    """Claim and finish every tenant's due transactions (up to `batch` each); how many. A
    tenant whose transactions cannot be claimed (its keys written outside the service) is
    named, at most once a minute, and passed over: it holds up no other."""
    wallet.hasten_again()
    done = 0
    for tenant in wallet.store.tenants():
        try:
            due = wallet.store.due(tenant, LEASE_S, batch)
        except Exception as error:
            if redis_away(error):
                raise
            _name_broken(tenant, error)
            continue
        done += len(due)
        for failed in pool.map(_finish, [wallet] * len(due), [tenant] * len(due), due):
            if failed is not None:
                log.error("wallet transaction %s: %s", *failed)
    return done


_NAMED: dict[str, float] = {}
"""When each broken tenant was last named (`time.monotonic`)."""


def _name_broken(tenant: str, error: Exception) -> None:
    now = time.monotonic()
    if now - _NAMED.get(tenant, -BROKEN_NAMED_EVERY_S) >= BROKEN_NAMED_EVERY_S:
        _NAMED[tenant] = now
        log.error("wallet: the due transactions of tenant %s cannot be claimed (%s: %s); "
                  "its others wait, no other tenant does", tenant, type(error).__name__,
                  str(error)[:200], extra={"tenant": tenant})  # fmt: skip


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
    failures = 0
    with ThreadPoolExecutor(CALLERS, thread_name_prefix="wallet") as pool:
        while not stop.is_set():
            try:
                busy = finish_due(wallet, pool) > 0
                failures, wait = 0, (0.0 if busy else idle_s)
            except Exception as error:  # noqa: BLE001 - its thread outlives it
                failures += 1
                wait = REDIS_AWAY.delay(failures)
                if redis_away(error):  # (a failover: CLUSTERDOWN, TRYAGAIN, READONLY...)
                    log.warning("wallet: Redis unreachable (%s)", type(error).__name__)
                else:  # a bug, or a value no check foresaw: tried again after the wait
                    log.exception("wallet: finishing the due transactions failed")
            stop.wait(wait)
