"""Items claimed ahead (``Worker(ahead=N)``, ``stopline run --ahead N``): claimed beyond what
runs, each waits in its worker for a step thread with its lease renewed from the claim on, and
is run by that worker, a stop included, so that the attempt its claim counted is one it makes.

No assertion here depends on how fast the machine is: hooks wait on events the test sets, and
every wait has a generous deadline.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import pytest

from helpers import T0, decide_at
from stopline import App, Automation, Evidence, ReportForReview
from stopline.core.commands import Discover
from stopline.core.decision import Decision
from stopline.core.states import State
from stopline.runtime.automation import HookContext
from stopline.runtime.worker import Worker
from stopline.store import Store

LEASE = 3.0  # seconds: renewed every second while held (two seconds to spare on a busy machine)


def now_utc() -> datetime:
    return datetime.now(UTC)


def discovered(store: Store, n: int) -> list[str]:
    ids = [f"i{k:03d}" for k in range(n)]
    for k, item_id in enumerate(ids):
        store.insert(decide_at(None, Discover(item_id, "auto", f"k{k}", {}), T0))
    return ids


class Held:
    """Observe hooks that wait for ``release``; ``started`` names the items whose hook began."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.started: list[str] = []

    def observe(self, ctx: HookContext) -> Evidence:
        assert ctx.item is not None
        with self.lock:
            self.started.append(ctx.item.id)
        self.release.wait(120)
        return Evidence({"k": ctx.item.key})

    def app(self, lease: float = LEASE, limit: int | None = None) -> App:
        def propose(ctx: HookContext) -> ReportForReview:
            return ReportForReview({"ok": True})

        auto = Automation(
            "auto",
            lambda ctx: [],
            self.observe,
            propose,
            lease_seconds=lease,
            hook_timeout=120,
            concurrency=limit,
        )
        return App([auto])


def wait_until(done: Callable[[], bool], what: str, deadline: float = 120) -> None:
    end = time.monotonic() + deadline
    while not done():
        assert time.monotonic() < end, f"gave up waiting for {what}"
        time.sleep(0.02)


def claimed_by(store: Store, worker: Worker) -> list[str]:
    return sorted(
        i.id for i in store.list_items(limit=100) if i.lease_owner == worker.id and i.lease_token
    )


@pytest.mark.parametrize(("concurrency", "ahead"), [(2, 0), (2, 1), (2, 3), (1, 1)])
def test_a_worker_claims_ahead_as_many_as_it_was_asked_beyond_what_runs(
    store: Store, concurrency: int, ahead: int
) -> None:
    """``concurrency`` step threads, every hook held: each turn claims one item (a batch of
    one) while there is room, and there is room for ``concurrency`` running and ``ahead``
    waiting (one at a time too: its one step runs on a step thread while the loop claims)."""
    held = Held()
    discovered(store, 6)
    worker = Worker(store, held.app(lease=60), concurrency=concurrency, ahead=ahead, clock=now_utc)
    try:
        for _ in range(6):
            worker.tick()
        wait_until(lambda: len(held.started) == concurrency, "the hooks to start")
        assert worker.claims == concurrency + ahead
        assert len(claimed_by(store, worker)) == concurrency + ahead
        assert len(held.started) == concurrency  # each step thread held by its hook
    finally:
        held.release.set()
        worker.close()
    done = store.list_items(state="ready_for_review", limit=10)
    assert len(done) == concurrency + ahead and all(i.attempts == 1 for i in done)


def test_an_automations_limit_counts_its_items_claimed_ahead(store: Store) -> None:
    """An automation's ``concurrency`` caps its items held by the worker, waiting ones too: a
    limit of two with room for four running and four ahead claims two."""
    held = Held()
    discovered(store, 8)
    worker = Worker(store, held.app(lease=60, limit=2), concurrency=4, ahead=4, clock=now_utc)
    try:
        for _ in range(8):
            worker.tick()
        wait_until(lambda: len(held.started) == 2, "two hooks to start")
        assert worker.claims == 2 and len(claimed_by(store, worker)) == 2
    finally:
        held.release.set()
        worker.close()


def test_an_item_claimed_ahead_keeps_its_lease_while_it_waits_and_runs_once(
    store: Store,
) -> None:
    """The item waiting for a step thread keeps its claim past its first lease (renewed from
    the claim, not from when it starts): no other worker can take it, and it runs once."""
    held = Held()
    ids = discovered(store, 3)
    worker = Worker(store, held.app(), concurrency=2, ahead=1, clock=now_utc)
    try:
        for _ in range(3):
            worker.tick()
        wait_until(lambda: len(held.started) == 2, "two hooks to start")
        (waiting,) = set(ids) - set(held.started)
        first = store.get(waiting)
        assert first is not None and first.lease_expires_at is not None
        assert first.lease_owner == worker.id
        ends = first.lease_expires_at

        def moved_on() -> bool:
            now = store.get(waiting)
            assert now is not None and now.lease_expires_at is not None
            return now.lease_expires_at >= ends + timedelta(seconds=LEASE)

        wait_until(moved_on, "the waiting item's lease to be renewed past its first lease")
        assert store.claim_batch("rival", now_utc(), 30, limit=5) == []
        assert waiting not in held.started
    finally:
        held.release.set()
        worker.close()  # a stop runs what was claimed ahead too
    done = {i.id: i for i in store.list_items(state="ready_for_review", limit=10)}
    assert sorted(done) == ids and all(i.attempts == 1 for i in done.values())
    assert worker.refusals == 0 and worker.claims == 3


def test_a_stop_runs_the_items_claimed_ahead_before_the_worker_ends(store: Store) -> None:
    """``close`` (a stop signal ends the loop with it) waits for the items claimed ahead as for
    those running: each is run, none is left claimed with its attempt spent."""
    held = Held()
    ids = discovered(store, 4)
    worker = Worker(store, held.app(lease=60), concurrency=1, batch=2, ahead=2, clock=now_utc)
    for _ in range(4):
        worker.tick()
    wait_until(lambda: len(held.started) == 2, "two hooks to start")
    assert worker.claims == 4
    closing = threading.Thread(target=worker.close, daemon=True)
    closing.start()
    held.release.set()
    closing.join(120)
    assert not closing.is_alive()
    assert sorted(held.started) == ids
    done = store.list_items(state="ready_for_review", limit=10)
    assert sorted(i.id for i in done) == ids and all(i.attempts == 1 for i in done)
    assert claimed_by(store, worker) == []


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        ({"ahead": -1}, "ahead must be a whole number of at least 0"),
        ({"ahead": True, "concurrency": 2}, "ahead must be a whole number of at least 0"),
        ({"ahead": 1.5, "concurrency": 2}, "ahead must be a whole number of at least 0"),
    ],
)
def test_a_worker_refuses_an_ahead_it_cannot_keep(store: Store, kwargs: dict, why: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError, match=why):
        Worker(store, Held().app(), **kwargs)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--ahead", "-1", "--concurrency", "4"], "--ahead must be at least 0"),
        (["--ahead", "-3"], "--ahead must be at least 0"),
    ],
)
def test_run_refuses_an_ahead_it_cannot_keep(tmp_path: Path, args: list[str], why: str) -> None:
    db = tmp_path / "never.db"
    app = "stopline.examples.demo:app"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "stopline.cli.main",
            "run",
            app,
            "--once",
            *args,
            "--db",
            f"sqlite:///{db}",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2, out.stderr
    assert why in out.stderr and "Traceback" not in out.stderr
    assert not db.exists()  # refused before any database was opened: nothing written


# --- an item's place goes to the next one when its last decision is on its way ---------------


class LastWriteHeld:
    """A store whose write of ``item_id``'s last decision (to ``ready_for_review``) waits for
    ``release``; ``writing`` is set when it has begun. Everything else goes straight through."""

    def __init__(self, store: Store, item_id: str) -> None:
        self.store = store
        self.item_id = item_id
        self.writing = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def apply_many(self, decisions: list[Decision]) -> list[bool]:
        if any(d.item_id == self.item_id and d.state is State.READY_FOR_REVIEW for d in decisions):
            self.writing.set()
            self.release.wait(120)
        return self.store.apply_many(decisions)


class Counted:
    """Observe hooks that note when each began and how many ran at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: dict[str, threading.Event] = {}
        self.running = self.most = 0

    def begun(self, item_id: str) -> threading.Event:
        with self.lock:
            return self.started.setdefault(item_id, threading.Event())

    def observe(self, ctx: HookContext) -> Evidence:
        assert ctx.item is not None
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.begun(ctx.item.id).set()
        time.sleep(0.01)
        with self.lock:
            self.running -= 1
        return Evidence({"k": ctx.item.key})


@pytest.mark.parametrize(("concurrency", "ahead", "limit"), [(1, 1, None), (2, 2, 1)])
def test_the_next_item_runs_while_the_last_decision_of_the_one_before_is_written(
    store: Store, concurrency: int, ahead: int, limit: int | None
) -> None:
    """Once an item calls nothing more, its place (and its automation's) goes to the next:
    the hooks of ``i001`` run while the write that ends ``i000`` waits, and never more hooks
    at once than the worker's ``concurrency`` and the automation's limit allow."""
    counted, ids = Counted(), discovered(store, 2)
    slow = LastWriteHeld(store, ids[0])
    auto = replace(Held().app(lease=60, limit=limit).automations[0], observe=counted.observe)
    worker = Worker(
        cast(Store, slow), App([auto]), concurrency=concurrency, ahead=ahead, clock=now_utc
    )
    try:
        wait_until(lambda: worker.tick() and slow.writing.is_set(), "i000's last write")
        for _ in range(5):
            worker.tick()  # claims i001, if it is not claimed yet
        assert counted.begun(ids[1]).wait(60), "i001 waited for the write that ends i000"
        assert not slow.release.is_set()
    finally:
        slow.release.set()
        worker.close()
    done = store.list_items(state="ready_for_review", limit=10)
    assert sorted(i.id for i in done) == ids and all(i.attempts == 1 for i in done)
    assert counted.most == min(concurrency, limit or concurrency)


def test_a_stop_waits_for_the_last_write_of_an_item_whose_place_went_on(store: Store) -> None:
    """``close`` waits for every write in flight, the last one of an item whose place the
    next item already took: the worker ends with nothing half done."""
    counted, ids = Counted(), discovered(store, 1)
    slow = LastWriteHeld(store, ids[0])
    auto = replace(Held().app(lease=60).automations[0], observe=counted.observe)
    worker = Worker(cast(Store, slow), App([auto]), concurrency=1, ahead=1, clock=now_utc)
    wait_until(lambda: worker.tick() and slow.writing.is_set(), "i000's last write")
    closing = threading.Thread(target=worker.close, daemon=True)
    closing.start()
    closing.join(1.0)
    waited = closing.is_alive()  # always, while the write waits (a close that did not: gone)
    slow.release.set()
    closing.join(120)
    assert waited and not closing.is_alive()
    done = store.get(ids[0])
    assert done is not None and done.state is State.READY_FOR_REVIEW and done.lease_owner is None
