"""The worker's hold on a claimed item (``runtime/lease.py``), rule by rule.

``LeaseHolder`` is what ``decide()`` is asked about: the lease end it reports, the check
before acting it hands to the decision that follows, what a new claim or a take-over starts
from. ``Renewer`` keeps every lease in flight alive, and only those: a released hold runs
out, a refused renewal is not tried again, a database that is away for a moment is tried
again. The renewer's tests wait for what must happen, with a generous deadline, and never
for something to happen in time; where they hold that something does not happen, the code
under test cannot do it at all, however slow the machine."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from helpers import T0, discover
from stopline.core.records import Item
from stopline.runtime.lease import LeaseHolder, Renewer, renewal_due
from stopline.store import Store

ACTORS = {"olivia": "an actor as the check read it"}


def _claimed(store: Store, lease: float = 30.0, at: datetime = T0) -> Item:
    discover(store, "k1", at=at)
    item = store.claim("w1", at, lease)
    assert item is not None and item.lease_expires_at == at + timedelta(seconds=lease)
    return item


# --- LeaseHolder ---------------------------------------------------------------------------


def test_a_check_goes_to_the_decision_on_the_same_version_only(store: Store) -> None:
    holder = LeaseHolder(_claimed(store))
    holder.checked(7, ACTORS)
    assert holder.checked_actors(8) is None  # another version: the decision reads again
    assert holder.checked_actors(7) is None  # and the check is spent


def test_a_check_goes_to_one_decision(store: Store) -> None:
    holder = LeaseHolder(_claimed(store))
    holder.checked(7, ACTORS)
    assert holder.checked_actors(7) == ACTORS
    assert holder.checked_actors(7) is None


def test_a_renewal_moves_the_lease_end_the_decision_sees(store: Store) -> None:
    holder = LeaseHolder(_claimed(store))
    holder.renewed(T0 + timedelta(seconds=20), 30.0)
    assert holder.current().lease_expires_at == T0 + timedelta(seconds=50)
    assert holder.item.lease_expires_at == T0 + timedelta(seconds=30)  # the row as read


def test_a_renewal_never_shortens_the_lease_the_row_shows(store: Store) -> None:
    holder = LeaseHolder(_claimed(store, lease=60.0))
    holder.renewed(T0, 10.0)
    assert holder.current().lease_expires_at == T0 + timedelta(seconds=60)


def test_an_item_no_one_holds_gets_no_lease_end(store: Store) -> None:
    """A commit that let the lease go (``holder.item`` then has no owner) is not given back
    the end of a renewal made before it."""
    item = _claimed(store)
    holder = LeaseHolder(item)
    holder.renewed(T0 + timedelta(seconds=20), 30.0)
    holder.item = replace(item, lease_owner=None, lease_expires_at=None)
    assert holder.current().lease_expires_at is None


def test_a_new_claim_starts_from_its_own_lease_end(store: Store) -> None:
    item = _claimed(store)
    holder = LeaseHolder(item)
    holder.renewed(T0 + timedelta(seconds=70), 30.0)  # the last claim was renewed to T0 + 100
    chained = replace(
        item, lease_token=item.lease_token + 1, lease_expires_at=T0 + timedelta(seconds=40)
    )
    holder.reset(chained)
    assert holder.current() == chained


def test_a_handed_over_hold_keeps_the_lease_end_and_no_check(store: Store) -> None:
    """The thread that takes a step over from a hook past its time (``watchdog.py``) starts
    from the latest renewal, and checks again before it acts: the check the abandoned
    thread made is not its own."""
    item = _claimed(store)
    holder = LeaseHolder(item)
    holder.renewed(T0 + timedelta(seconds=20), 30.0)
    holder.checked(item.version, ACTORS)
    taken = holder.handed_over()
    assert taken.current().lease_expires_at == T0 + timedelta(seconds=50)
    assert taken.checked_actors(item.version) is None


def test_a_lease_with_no_end_is_renewed_before_acting(store: Store) -> None:
    """A row that shows no lease end says nothing of how much is left: renew first."""
    item = replace(_claimed(store), lease_expires_at=None)
    assert renewal_due(item, T0, 30.0)
    assert not renewal_due(_claimed_again(store), T0, 30.0)


def _claimed_again(store: Store) -> Item:
    found = store.get("auto-k1")
    assert found is not None and found.lease_expires_at == T0 + timedelta(seconds=30)
    return found


# --- Renewer, on a real clock ----------------------------------------------------------------


def now_utc() -> datetime:
    return datetime.now(UTC)


class Renewals:
    """The real store, with every renewal the renewer asks for written down (and, while
    ``away`` is above zero, the database away for that many of them)."""

    def __init__(self, store: Store, away: int = 0) -> None:
        self.store = store
        self.asked: list[str] = []
        self.away = away
        self._lock = threading.Lock()

    def renew(self, item: Item, now: datetime, lease_seconds: float) -> bool:
        with self._lock:
            self.asked.append(item.id)
            away, self.away = self.away > 0, max(0, self.away - 1)
        if away:
            raise sqlite3.OperationalError("the database is away for a moment")
        return self.store.renew(item, now, lease_seconds)

    def count(self, item_id: str) -> int:
        with self._lock:
            return self.asked.count(item_id)


def wait_until(done: Callable[[], Any], deadline: float = 60) -> Any:
    end = time.monotonic() + deadline
    while not (found := done()):
        assert time.monotonic() < end, "gave up waiting"
        time.sleep(0.05)
    return found


def _lease_end(store: Store, item: Item) -> datetime | None:
    row = store.get(item.id)
    assert row is not None
    return row.lease_expires_at


def test_a_released_hold_lets_its_lease_run_out(store: Store) -> None:
    item = _claimed(store, at=now_utc())  # claimed for 30 s, held on 0.6 s renewals
    renewer = Renewer(store, now_utc)
    # the holder as if it had read the row when the lease was about to run out: a renewal
    # must move the end its next decision is checked against
    ending = item.lease_expires_at - timedelta(seconds=30)
    holder = LeaseHolder(replace(item, lease_expires_at=ending))
    with renewer.holding(holder, 0.6):
        wait_until(lambda: _lease_end(store, item) != item.lease_expires_at)
        wait_until(lambda: holder.current().lease_expires_at != ending)
    # no longer held: the lease runs out, and another worker may claim the item
    assert wait_until(lambda: store.claim("w2", now_utc(), 30.0)).id == item.id


def test_a_refused_renewal_is_not_tried_again(store: Store) -> None:
    """A claim another one replaced (its fencing token is gone) is asked once, refused, and
    never again; an item no one holds is never asked. (Held on 0.3 s renewals: asking again
    would come every 0.1 s.)"""
    item = _claimed(store, at=now_utc())
    stale = LeaseHolder(replace(item, lease_token=item.lease_token + 1))
    unowned = LeaseHolder(replace(item, id="auto-nobody", lease_owner=None))
    spy = Renewals(store)
    renewer = Renewer(spy, now_utc)  # type: ignore[arg-type]
    with renewer.holding(stale, 0.3), renewer.holding(unowned, 0.3):
        wait_until(lambda: spy.count(item.id) >= 1)
        time.sleep(1.0)
    assert spy.count(item.id) == 1
    assert spy.count("auto-nobody") == 0
    assert _lease_end(store, item) == item.lease_expires_at


def test_a_database_away_for_a_moment_is_tried_again(store: Store) -> None:
    item = _claimed(store, at=now_utc())
    spy = Renewals(store, away=2)
    renewer = Renewer(spy, now_utc)  # type: ignore[arg-type]
    with renewer.holding(LeaseHolder(item), 0.6):
        wait_until(lambda: _lease_end(store, item) != item.lease_expires_at)
    assert spy.count(item.id) >= 3
