"""The lease that lets one process at a time do a duty (service/projections/lease.py), on a real
Redis."""

from __future__ import annotations

import threading
import time

import pytest

from service.projections.lease import Lease, run_while_holding
from tests.waiting import eventually

BOUND_S = 10.0  # a bound on a busy machine, not a timing
EVERY_S = 0.01  # (in time to renew a lease of 1 s once half of it is gone)


def test_one_holder_at_a_time_until_it_releases_or_its_lease_expires(redis_client):
    a = Lease(redis_client, "duty", ttl_s=0.3)
    b = Lease(redis_client, "duty", ttl_s=0.3)
    assert a.hold() and a.hold()  # taken, then renewed
    assert not b.hold()
    b.release()  # not b's: nothing happens
    assert not b.hold()
    a.release()
    assert b.hold() and not a.hold()
    expired = lambda: not redis_client.exists(b.key)  # noqa: E731
    eventually(expired, BOUND_S, "b's lease expired (b did not renew it)", every_s=EVERY_S)
    assert a.hold() and not b.hold()


def test_a_renewed_lease_outlives_its_time_to_live(redis_client):
    a = Lease(redis_client, "duty", ttl_s=1.0)
    b = Lease(redis_client, "duty", ttl_s=1.0)
    assert a.hold()
    taken = time.monotonic()
    while time.monotonic() - taken < 2.5:  # well past its time to live
        eventually(
            lambda: redis_client.pttl(a.key) < 500, BOUND_S, "half of it gone", every_s=EVERY_S
        )
        assert a.hold()
        assert redis_client.pttl(a.key) > 500  # renewed: a whole time to live again
        assert not b.hold()


def test_a_lease_needs_a_positive_time_to_live(redis_client):
    with pytest.raises(ValueError, match="at least"):
        Lease(redis_client, "duty", ttl_s=0)


class CountedLease(Lease):
    """A lease that counts how often its runner has tried to take or renew it."""

    looks = 0

    def hold(self) -> bool:
        self.looks += 1
        return super().hold()


class Duty:
    """Records which runners are doing the duty."""

    def __init__(self) -> None:
        self.active: set[str] = set()

    def of(self, name: str):
        def duty(term: threading.Event) -> None:
            self.active.add(name)
            term.wait()
            self.active.discard(name)

        return duty


def test_a_runner_stopped_cleanly_hands_the_duty_over_at_once(redis_client):
    duty = Duty()
    stops = {name: threading.Event() for name in ("a", "b")}
    runners = {}
    leases = {}
    for name in ("a", "b"):  # a first: it takes the lease
        lease = leases[name] = CountedLease(redis_client, "duty", ttl_s=30.0)
        runners[name] = threading.Thread(
            target=run_while_holding,
            args=(lease, duty.of(name), stops[name]),
            kwargs={"renew_s": 0.05},
        )
        runners[name].start()
        if name == "a":
            eventually(lambda: duty.active == {"a"}, 5, "a doing the duty", every_s=EVERY_S)
    try:
        eventually(
            lambda: leases["b"].looks >= 5,
            BOUND_S,
            "b looked at the lease 5 times",
            every_s=EVERY_S,
        )
        assert duty.active == {"a"}
        stops["a"].set()
        runners["a"].join(5)
        eventually(  # well inside the 30 s the lease would last
            lambda: duty.active == {"b"},
            2,
            "b doing the duty",
            every_s=EVERY_S,
            detail=lambda: duty.active,
        )
    finally:
        for name in stops:
            stops[name].set()
            runners[name].join(5)
    assert duty.active == set()
