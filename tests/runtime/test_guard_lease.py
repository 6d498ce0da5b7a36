"""The lease before an acting call (``Worker.guard`` with authority): a lease the row read
just now shows with at least two thirds of it left is acted on as it is; one with less is
renewed first; one the row shows as run out (or taken) is never acted on, and nothing is
written. On both stores, on a fixed clock."""

from __future__ import annotations

from datetime import timedelta

import pytest

from helpers import T0, discover
from integrity.attacker import Attacker
from stopline import App, Automation, Evidence, ReportForReview
from stopline.runtime.lease import LeaseHolder, LeaseLost
from stopline.runtime.worker import Worker
from stopline.store import Store

LEASE = 30.0


def _app() -> App:
    def nothing(ctx):  # type: ignore[no-untyped-def]
        return []

    def observe(ctx):  # type: ignore[no-untyped-def]
        return Evidence({"ok": True})

    def propose(ctx):  # type: ignore[no-untyped-def]
        return ReportForReview({"ok": True})

    return App([Automation("auto", nothing, observe, propose, lease_seconds=LEASE)])


def _worker(store: Store, elapsed: float) -> Worker:
    return Worker(
        store,
        _app(),
        worker_id="w1",
        clock=lambda: T0 + timedelta(seconds=elapsed),
        renew=False,
        host_trust=False,
    )


@pytest.mark.parametrize(
    ("elapsed", "renewed"),
    [(0.0, False), (LEASE / 3 - 1, False), (LEASE / 3 + 1, True), (LEASE - 1, True)],
)
def test_a_lease_is_renewed_before_acting_when_less_than_two_thirds_is_left(
    store: Store, elapsed: float, renewed: bool
) -> None:
    discover(store, "k1")
    item = store.claim("w1", T0, LEASE)
    assert item is not None and item.lease_expires_at == T0 + timedelta(seconds=LEASE)
    worker = _worker(store, elapsed)
    assert worker.guard(LeaseHolder(item))
    after = store.get(item.id)
    assert after is not None and after.version == item.version  # a renewal is not a decision
    now = T0 + timedelta(seconds=elapsed)
    ends = now + timedelta(seconds=LEASE) if renewed else T0 + timedelta(seconds=LEASE)
    assert after.lease_expires_at == ends


@pytest.mark.parametrize("expires", [-1.0, 0.0])
def test_a_lease_the_row_shows_run_out_is_never_acted_on(
    store: Store, store_url: str, expires: float
) -> None:
    """The worker still believes in its lease (it claimed it a moment ago); the row says it
    ran out. The check before acting raises :class:`LeaseLost` and writes nothing."""
    discover(store, "k1")
    item = store.claim("w1", T0, LEASE)
    assert item is not None
    attacker = Attacker(store_url)
    try:
        ends = T0 + timedelta(seconds=expires)
        attacker.sql(
            "UPDATE items SET lease_expires_at = :at WHERE id = :id",
            {"at": attacker.time(ends), "id": item.id},
        )
    finally:
        attacker.close()
    with pytest.raises(LeaseLost):
        _worker(store, 0.0).guard(LeaseHolder(item))
    after = store.get(item.id)
    assert after is not None and after.version == item.version
    assert after.lease_expires_at == T0 + timedelta(seconds=expires)
    assert [e.seq for e in store.history(item.id)] == [1]


class _RenewalRefused:
    """The store as it is, but for a refused renewal: the lease ran out, or another claim
    took it, between the read before acting and the renewal."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def renew(self, *args: object, **kwargs: object) -> bool:
        return False


def test_a_renewal_refused_before_acting_is_never_acted_on(store: Store) -> None:
    """The row read before acting shows the lease live with a second left, so the worker
    renews it first; the renewal is refused. The check raises :class:`LeaseLost` (the row's
    second left is no licence to act) and writes nothing."""
    discover(store, "k1")
    item = store.claim("w1", T0, LEASE)
    assert item is not None
    worker = Worker(
        _RenewalRefused(store),  # type: ignore[arg-type]
        _app(),
        worker_id="w1",
        clock=lambda: T0 + timedelta(seconds=LEASE - 1),
        renew=False,
        host_trust=False,
    )
    with pytest.raises(LeaseLost):
        worker.guard(LeaseHolder(item))
    assert store.get(item.id) == item
    assert [e.seq for e in store.history(item.id)] == [1]
