"""A discovery hook may list new keys without end (a hostile one, or one whose source went
wrong): each pass could create up to 10,000 items, each to be observed, proposed and put
before a person. ``Automation.max_open_items`` bounds what stands unended: past it discovery
creates no item, the keys it holds back are created by a later pass once items have ended,
and keys that exist are untouched either way. On both stores, a real scheduler and worker."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stopline import App, Automation, Evidence, Proposal, TerminalError
from stopline.core.states import StateClass
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.worker import Worker
from stopline.store import Store, open_store

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)  # in the past: items are due at once
WAIT = 60.0  # seconds the worker is given to end three items (never reached when it does)


def gone(ctx: Any) -> Evidence:
    raise TerminalError("the source is gone")  # the item ends (failed) at its first step


def app_of(listed: list[str], most: int | None) -> App:
    ops = Automation(
        "ops",
        lambda ctx: list(listed),
        gone,
        lambda ctx: Proposal("publish", {}),
        max_open_items=most,
    )
    return App([ops])


def states(store: Store) -> set[str]:
    return {item.state.value for item in store.list_items(automation="ops")}


def work_until(store: Store, app: App, state: str) -> None:
    """A worker works the items until every one is in ``state``."""
    worker = Worker(store, app)
    deadline = time.monotonic() + WAIT
    while states(store) != {state} and time.monotonic() < deadline:
        if not worker.tick():
            time.sleep(0.01)
    worker.close()
    assert states(store) == {state}


def keys(store: Store) -> list[str]:
    return sorted(item.key for item in store.list_items(automation="ops"))


def test_discovery_creates_no_item_past_max_open_items_until_items_end(store: Store) -> None:
    listed = [f"k{i}" for i in range(5)]
    app = app_of(listed, most=3)
    scheduler = Scheduler(store, app, clock=lambda: T0)
    scheduler.register()

    fired = scheduler.tick(force=True)[0]
    assert (fired.new, fired.existing, fired.held_back) == (3, 0, 2)
    assert keys(store) == ["k0", "k1", "k2"]
    assert store.open_items("ops", 10) == 3

    fired = scheduler.tick(force=True)[0]  # nothing ended: nothing more created
    assert (fired.new, fired.existing, fired.held_back) == (0, 3, 2)
    assert len(keys(store)) == 3

    work_until(store, app, "failed")
    assert store.open_items("ops", 10) == 0

    fired = scheduler.tick(force=True)[0]  # three ended: the two held back are created
    assert (fired.new, fired.existing, fired.held_back) == (2, 3, 0)
    assert keys(store) == listed


def test_no_limit_creates_every_new_key(store: Store) -> None:
    listed = [f"k{i}" for i in range(5)]
    scheduler = Scheduler(store, app_of(listed, most=None), clock=lambda: T0)
    scheduler.register()
    fired = scheduler.tick(force=True)[0]
    assert (fired.new, fired.held_back) == (5, 0)


def test_the_count_stops_at_most(store: Store) -> None:
    scheduler = Scheduler(store, app_of([f"k{i}" for i in range(5)], most=None), clock=lambda: T0)
    scheduler.register()
    scheduler.tick(force=True)
    assert [store.open_items("ops", most) for most in (1, 4, 5, 100)] == [1, 4, 5, 5]
    assert store.open_items("other", 100) == 0


def test_stopped_items_count_as_open(store: Store) -> None:
    """An item stopped for a person (``exception``) has not ended: it counts."""

    def broken(ctx: Any) -> Evidence:
        raise RuntimeError("not a class the automation retries or ends on")

    ops = Automation("ops", lambda ctx: ["k0", "k1"], broken, lambda ctx: Proposal("p", {}))
    app = App([ops])
    scheduler = Scheduler(store, app, clock=lambda: T0)
    scheduler.register()
    scheduler.tick(force=True)
    work_until(store, app, "exception")
    assert store.open_items("ops", 10) == 2


def test_open_means_work_or_stop() -> None:
    """The stores count the items of class ``work`` or ``stop`` (through those classes'
    indexes): a new class of state must be counted there too."""
    assert {c.value for c in StateClass} == {"work", "stop", "terminal"}


def test_on_sqlite_the_count_reads_the_index_by_class(tmp_path: Path) -> None:
    """Not the index by automation, which holds every ended item of it too."""
    url = f"sqlite:///{tmp_path / 'plan.db'}"
    store = open_store(url)
    query = store.q["open_items"]
    store.close()
    with contextlib.closing(sqlite3.connect(tmp_path / "plan.db")) as conn:
        plan = conn.execute(f"EXPLAIN QUERY PLAN {query}", {"automation": "a", "most": 1})
        details = " ".join(str(row[-1]) for row in plan.fetchall())
    assert "USING INDEX items_due (state_class=?)" in details, details


@pytest.mark.parametrize("most", [0, -1, True, 2.5, "3"])
def test_max_open_items_is_a_whole_number_of_at_least_one(most: Any) -> None:
    with pytest.raises(ValueError, match="max_open_items of ops"):
        app_of([], most=most)
