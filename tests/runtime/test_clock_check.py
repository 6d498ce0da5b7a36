"""A worker whose host clock disagrees with the database server's claims and sweeps nothing.

Every time a worker decides is its host's: a clock a year ahead set leases and retries a year
out (an item hidden from every other worker), a clock behind took stale evidence for fresh.
On PostgreSQL a worker now reads the server's clock and, while its own differs by more than
``max_clock_skew``, does no work and says so in its log; SQLite has no clock of its own (every
process on it reads its one host's). A real scheduler, worker and database, a clock offset.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import pytest

from stopline import App
from stopline.cli.workers import workers_doc
from stopline.clock import utcnow
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.worker import Worker
from stopline.store import Store
from stopline.targets.directory import DirectoryTarget

from .notice import drain, notice_automation

YEAR = timedelta(days=365)


@pytest.mark.parametrize("offset", [YEAR, -timedelta(hours=1)])
def test_a_worker_whose_clock_is_off_claims_nothing(
    store: Store, tmp_path: Path, offset: timedelta, caplog: pytest.LogCaptureFixture
) -> None:
    app = App([notice_automation(DirectoryTarget(tmp_path / "out"))])
    scheduler = Scheduler(store, app)
    scheduler.register()
    scheduler.tick(force=True)
    (item,) = store.list_items(automation="ops")
    before = store.history(item.id)

    def off() -> object:
        return utcnow() + offset

    skewed = Worker(
        store, app, worker_id="off", renew=False, host_trust=False, clock=off, max_clock_skew=30
    )
    with caplog.at_level(logging.ERROR, logger="stopline.worker"):
        claimed = skewed.tick()
    if store.dialect == "sqlite":  # no server clock: the host's is the only one (an hour
        assert skewed.clocked.skew is None  # behind, the item discovered now is not due yet)
        assert claimed is (offset > timedelta(0))
        return
    assert claimed is False and skewed.tick() is False
    assert skewed.clocked.skew is not None
    assert abs(skewed.clocked.skew - offset.total_seconds()) < 60
    assert store.history(item.id) == before
    assert store.get(item.id).lease_owner is None  # type: ignore[union-attr]
    assert [r.message for r in caplog.records if "database server's" in r.message]
    skewed.beat.tick(utcnow(), force=True)
    (off_beat,) = [w for w in workers_doc(store, utcnow())["workers"] if w["worker"] == "off"]
    assert off_beat["clock_off"] is True and off_beat["live"] is False
    assert abs(off_beat["clock_skew_seconds"] - offset.total_seconds()) < 60

    drain(Worker(store, app, worker_id="on", renew=False, host_trust=False, max_clock_skew=30))
    assert store.get(item.id).state.value == "completed"  # type: ignore[union-attr]


def test_a_worker_on_the_hosts_own_clock_checks_it_by_default(store: Store) -> None:
    app = App([notice_automation(DirectoryTarget(Path("/nonexistent")))])
    assert Worker(store, app, renew=False, host_trust=False).clocked.active
    passed = Worker(store, app, renew=False, host_trust=False, clock=lambda: utcnow())
    assert not passed.clocked.active  # a clock passed in is the caller's simulation
