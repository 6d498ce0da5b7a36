"""A lockstep worker with items claimed ahead (``Worker(lockstep=True, ahead=A)``, ``stopline
run --lockstep --ahead A``): at most ``concurrency`` hooks run at once, in as many places, and
up to ``A`` more items are in flight, each queued for a place at most; a hook that ends hands
its place to the first one queued. The group reads and writes run on a thread of their own.

No assertion depends on how fast the machine is: a hook that must hold its place waits for an
event the test sets once it has seen what it checks, and every wait has a generous deadline
that only a broken worker reaches.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from helpers import T0, decide_at
from stopline import App, Automation, Evidence, ReportForReview
from stopline.core.commands import Discover
from stopline.core.states import State
from stopline.runtime.automation import HookContext
from stopline.runtime.hook_threads import Call, HookThreads
from stopline.runtime.worker import Worker
from stopline.store import Store

from .acting import discovered, drain

DEADLINE = 30.0  # seconds: only a worker that is broken takes this long


def propose(ctx: HookContext) -> ReportForReview:
    return ReportForReview({"ok": True})


class Holding:
    """Observe hooks that count how many run at once and hold their place until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.started: list[str] = []

    def enter(self, key: str) -> None:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(key)

    def leave(self) -> None:
        with self.lock:
            self.running -= 1

    def plain(self, ctx: HookContext) -> Evidence:
        self.enter(ctx.item.key)
        try:
            assert self.release.wait(DEADLINE)
        finally:
            self.leave()
        return Evidence({"ok": True})

    async def coroutine(self, ctx: HookContext) -> Evidence:
        self.enter(ctx.item.key)
        try:
            end = time.monotonic() + DEADLINE
            while not self.release.is_set():
                assert time.monotonic() < end
                await asyncio.sleep(0.005)
        finally:
            self.leave()
        return Evidence({"ok": True})


def app_of(observe: Callable[..., Any]) -> App:
    return App([Automation("auto", lambda ctx: [], observe, propose)])


def tick_until(worker: Worker, done: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + DEADLINE
    while not done():
        assert time.monotonic() < end, f"never {what}"
        worker.tick()


def attempts(store: Store, item_id: str) -> list[str]:
    """The failure class of each of the item's failed attempts."""
    item = store.get(item_id)
    assert item is not None
    return [entry["class"] for entry in item.attempt_log]


def states(store: Store, ids: list[str]) -> list[State]:
    found = [store.get(i) for i in ids]
    return [i.state for i in found if i is not None]


@pytest.mark.parametrize("kind", ["plain", "async"])
def test_at_most_concurrency_hooks_run_and_the_items_ahead_wait_for_a_place(
    store: Store, kind: str
) -> None:
    """Concurrency 2, ahead 3, eight items: five in flight, two hooks running, three queued;
    once released every item ends, and never more than two hooks ran at once."""
    ids = discovered(store, 8)
    holding = Holding()
    hook = holding.plain if kind == "plain" else holding.coroutine
    worker = Worker(store, app_of(hook), concurrency=2, ahead=3, lockstep=True)
    lockstep = worker.lockstep
    assert lockstep is not None
    tick_until(
        worker,
        lambda: lockstep.in_flight == 5 and lockstep.places.queued == 3 and holding.running == 2,
        "five in flight with two hooks running",
    )
    assert lockstep.places.held == 2
    assert len(holding.started) == 2  # the queued ones have not started
    for _ in range(5):  # rounds change nothing while the two hold their places
        worker.tick()
    assert lockstep.in_flight == 5 and holding.running == 2 and len(holding.started) == 2
    holding.release.set()
    drain(worker)
    assert states(store, ids) == [State.READY_FOR_REVIEW] * 8
    assert holding.most == 2 and len(holding.started) == 8
    assert lockstep.places.held == 0 and lockstep.places.queued == 0


def test_without_ahead_a_lockstep_worker_holds_only_concurrency_items(store: Store) -> None:
    discovered(store, 4)
    holding = Holding()
    worker = Worker(store, app_of(holding.plain), concurrency=2, lockstep=True)
    lockstep = worker.lockstep
    assert lockstep is not None
    tick_until(worker, lambda: holding.running == 2, "two hooks running")
    for _ in range(5):
        worker.tick()
    assert lockstep.in_flight == 2 and lockstep.places.queued == 0
    holding.release.set()
    drain(worker)


@pytest.mark.parametrize("kind", ["plain", "async"])
def test_a_hooks_time_runs_from_its_start_not_from_its_place_in_the_queue(
    store: Store, kind: str
) -> None:
    """Automation ``slow``'s hook holds the one place while automation ``quick``'s item waits
    queued, the worker running rounds, for longer than ``quick``'s ``hook_timeout``; once
    ``slow`` lets go, ``quick``'s hook answers at once and is not timed out."""
    holding = Holding()
    quick_timeout = 1.0

    def answer(ctx: HookContext) -> Evidence:
        return Evidence({"ok": True})

    async def answer_async(ctx: HookContext) -> Evidence:
        return Evidence({"ok": True})

    slow = holding.plain if kind == "plain" else holding.coroutine
    quick = answer if kind == "plain" else answer_async
    app = App(
        [
            Automation("slow", lambda ctx: [], slow, propose, hook_timeout=120),
            Automation("quick", lambda ctx: [], quick, propose, hook_timeout=quick_timeout),
        ]
    )
    worker = Worker(store, app, concurrency=1, ahead=1, lockstep=True)
    lockstep = worker.lockstep
    assert lockstep is not None
    store.insert(decide_at(None, Discover("s0", "slow", "k0", {}), T0))
    tick_until(worker, lambda: holding.running == 1, "the slow hook running")
    store.insert(decide_at(None, Discover("q0", "quick", "k0", {}), T0))
    tick_until(worker, lambda: lockstep.places.queued == 1, "the quick item queued")
    queued_until = time.monotonic() + quick_timeout + 0.5
    while time.monotonic() < queued_until:  # rounds that check every deadline meanwhile
        worker.tick()
    holding.release.set()
    drain(worker)
    assert [attempts(store, i) for i in ("s0", "q0")] == [[], []]
    assert states(store, ["s0", "q0"]) == [State.READY_FOR_REVIEW] * 2


def test_an_async_hook_that_cannot_start_is_its_items_failure_and_holds_no_place(
    store: Store,
) -> None:
    """An ``async`` hook whose coroutine cannot be made (its call raises before it runs) is
    each item's failure, as one step at a time has it; no place is taken or left held."""
    ids = discovered(store, 3)

    class Broken:
        async def __call__(self, ctx: HookContext, missing: object) -> Evidence:
            return Evidence({"ok": True})  # pragma: no cover - never called like this

    worker = Worker(store, app_of(Broken()), concurrency=1, ahead=2, lockstep=True)
    drain(worker)
    assert worker.lockstep is not None
    assert worker.lockstep.places.held == 0 and worker.lockstep.places.queued == 0
    assert State.READY_FOR_REVIEW not in states(store, ids)
    assert worker.transitions >= 3  # each item's failure was recorded


def test_group_reads_and_writes_run_off_the_drivers_thread(store: Store) -> None:
    """The decisions of a round are written on the jobs' thread, never on the worker's own,
    so the driver runs other items while the store is waited for; every item still ends."""
    ids = discovered(store, 10)
    driver = threading.current_thread()
    threads: set[threading.Thread] = set()
    apply_many = store.apply_many

    def recording(decisions: Any) -> list[bool]:
        threads.add(threading.current_thread())
        return apply_many(decisions)

    store.apply_many = recording  # type: ignore[method-assign]
    worker = Worker(
        store, app_of(lambda ctx: Evidence({"ok": True})), batch=4, ahead=2, lockstep=True
    )
    drain(worker)
    assert states(store, ids) == [State.READY_FOR_REVIEW] * 10
    assert threads and driver not in threads


def test_a_hook_no_thread_can_run_is_its_items_failure_and_holds_no_place(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When no hook thread can be had (the process out of threads, say), each plain hook's
    call fails as its item's, on whichever thread started it; the places are all let go and
    the worker goes on."""
    ids = discovered(store, 3)

    def no_thread(self: HookThreads, call: Call) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(HookThreads, "submit", no_thread)
    worker = Worker(
        store, app_of(lambda ctx: Evidence({"ok": True})), concurrency=1, ahead=2, lockstep=True
    )
    drain(worker)
    assert worker.lockstep is not None
    assert worker.lockstep.places.held == 0 and worker.lockstep.places.queued == 0
    assert State.READY_FOR_REVIEW not in states(store, ids)
    assert all(attempts(store, i) for i in ids)  # each item's attempt recorded as failed


def test_an_item_is_renewed_from_its_claim_before_the_driver_first_runs_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver may be busy for a while between a claim and the item's first run (another
    item's work on its thread, a write lock held by another process): the claim's lease is
    renewed from the claim on, as a step thread's is, so no other worker takes the item over
    and runs its hooks a second time meanwhile."""
    (item_id,) = discovered(store, 1)
    app = App(
        [Automation("auto", lambda ctx: [], lambda ctx: Evidence({}), propose, lease_seconds=1.0)]
    )
    worker = Worker(store, app, concurrency=2, lockstep=True)
    lockstep = worker.lockstep
    assert lockstep is not None
    monkeypatch.setattr(type(lockstep), "pump", lambda self, wait=True: None)  # a busy driver
    tick_until(worker, lambda: lockstep.in_flight == 1, "the item claimed")
    claimed = store.get(item_id)
    assert claimed is not None and claimed.lease_expires_at is not None
    end = time.monotonic() + DEADLINE
    while True:  # renewed by the renewer's thread while the item has not run at all
        now = store.get(item_id)
        assert now is not None and now.state == claimed.state
        if now.lease_expires_at is not None and now.lease_expires_at > claimed.lease_expires_at:
            break
        assert time.monotonic() < end, "the claim was never renewed before the item ran"
        time.sleep(0.05)
    monkeypatch.undo()
    drain(worker)
    assert states(store, [item_id]) == [State.READY_FOR_REVIEW]
