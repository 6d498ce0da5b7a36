"""Lockstep workers (``Worker(lockstep=True)``, ``stopline run --lockstep``): the items in
flight run as greenlets of the worker's one thread, their hooks at once (plain ones on hook
threads, ``async`` ones on the event loop) and their decisions written in groups.

The reliability labs run every one of their tests in this mode too (``LAB_MODES``); these
tests hold what is particular to it. No assertion depends on how fast the machine is: hooks
that must run at the same time meet at a barrier that only that lets them pass, and a hook
that must run past its time waits for an event nobody sets.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any, cast

import pytest

from helpers import T0, decide_at
from stopline import App, Automation, Evidence, Proposal, ReportForReview, RetryPolicy
from stopline.core.commands import Observe
from stopline.core.states import State
from stopline.core.verify import verify_item
from stopline.runtime.automation import HookContext
from stopline.runtime.worker import Worker
from stopline.store import Store, open_store

from .acting import Reads, acting_app, discovered, drain, edit_first_event

N = 4


def propose(ctx: HookContext) -> ReportForReview:
    return ReportForReview({"ok": True})


def app_of(observe: Callable[..., Any], hook_timeout: float = 120) -> App:
    retry = RetryPolicy(base_delay=0.1)
    auto = Automation(
        "auto", lambda ctx: [], observe, propose, hook_timeout=hook_timeout, retry=retry
    )
    return App([auto])


def states(store: Store, ids: list[str]) -> list[State]:
    found = [store.get(i) for i in ids]
    return [i.state for i in found if i is not None]


def test_a_lockstep_worker_runs_every_item_to_its_stop_and_writes_in_groups(store: Store) -> None:
    ids = discovered(store, 12)
    worker = Worker(
        store, app_of(lambda ctx: Evidence({"k": ctx.item.key})), batch=N, lockstep=True
    )
    drain(worker)
    assert states(store, ids) == [State.READY_FOR_REVIEW] * 12
    assert worker.transitions == 24 and worker.claims == 12
    assert worker.lockstep is not None and worker.slots is None
    assert worker.committer is worker.lockstep  # its decisions are written in its groups
    assert worker.lockstep.largest > 1, "no group held more than one decision"
    assert worker.lockstep.groups < 24
    for item_id in ids:
        item = store.get(item_id)
        assert item is not None
        assert verify_item(item, store.history(item_id)) == []


def test_plain_hooks_of_a_lockstep_worker_run_at_the_same_time(store: Store) -> None:
    """Four plain hooks meet at a barrier of four: run one after another, none would pass."""
    ids = discovered(store, N)
    barrier = threading.Barrier(N, timeout=60)

    def observe(ctx: HookContext) -> Evidence:
        barrier.wait()
        return Evidence({"met": True})

    drain(Worker(store, app_of(observe), concurrency=N, lockstep=True))
    assert states(store, ids) == [State.READY_FOR_REVIEW] * N


def test_async_hooks_of_a_lockstep_worker_run_at_the_same_time(store: Store) -> None:
    ids = discovered(store, N)
    arrived: list[str] = []
    lock = threading.Lock()

    async def observe(ctx: HookContext) -> Evidence:
        with lock:
            arrived.append(ctx.item.id)
        for _ in range(60_000):  # at most a minute: every hook must be waiting at once
            with lock:
                if len(arrived) == N:
                    return Evidence({"met": True})
            await asyncio.sleep(0.001)
        raise TimeoutError("the other hooks never started")

    drain(Worker(store, app_of(observe), concurrency=N, lockstep=True))
    assert states(store, ids) == [State.READY_FOR_REVIEW] * N


@pytest.mark.parametrize("kind", ["plain", "async"])
def test_a_hook_past_its_time_is_abandoned_and_the_others_go_on(store: Store, kind: str) -> None:
    """One hook never returns; each attempt is recorded ``hook_timeout`` and retried until its
    budget is spent, and the items beside it reach their stop meanwhile."""
    ids = discovered(store, 3)
    stuck = "i000"
    never = threading.Event()

    def plain(ctx: HookContext) -> Evidence:
        if ctx.item.id == stuck:
            never.wait(120)
        return Evidence({"ok": True})

    async def waiting(ctx: HookContext) -> Evidence:
        if ctx.item.id == stuck:
            await asyncio.Event().wait()
        return Evidence({"ok": True})

    observe = plain if kind == "plain" else waiting
    try:
        worker = Worker(store, app_of(observe, hook_timeout=0.5), concurrency=3, lockstep=True)
        drain_until_exhausted(worker, store, stuck)
    finally:
        never.set()
    item = store.get(stuck)
    assert item is not None and item.state is State.EXHAUSTED
    log = [(e["class"], e["outcome"]) for e in item.attempt_log]
    assert log[-1] == ("hook_timeout", "exhausted")
    assert set(log[:-1]) == {("hook_timeout", "retry")}
    assert states(store, ids[1:]) == [State.READY_FOR_REVIEW] * 2


def drain_until_exhausted(worker: Worker, store: Store, item_id: str) -> None:
    """Tick (and sweep) until ``item_id`` spent its budget; the retry's delay is waited out."""
    end = time.monotonic() + 120
    while True:
        worker.tick()
        item = store.get(item_id)
        if item is not None and item.state is State.EXHAUSTED:
            break
        assert time.monotonic() < end, "the stuck item never spent its budget"
        time.sleep(0.01)
    worker.close()


def test_a_lockstep_worker_refuses_a_negative_ahead(store: Store) -> None:
    with pytest.raises(ValueError, match="ahead"):
        Worker(store, app_of(lambda ctx: Evidence({})), lockstep=True, ahead=-1)


def test_one_item_at_a_time_in_lockstep_runs_every_item(store: Store) -> None:
    """With room for one item, each round ends the item in flight: the loop must still be
    told there is work (else a ``--once`` run stops with items due)."""
    ids = discovered(store, 5)
    drain(Worker(store, app_of(lambda ctx: Evidence({"ok": True})), lockstep=True))
    assert states(store, ids) == [State.READY_FOR_REVIEW] * 5


def test_a_decision_that_lost_its_compare_and_set_is_not_taken_as_written(
    store: Store, store_url: str
) -> None:
    """While its hook runs, another write changes the item: the worker's decision loses, is
    audited as refused, counts as no transition, and leaves no event; the item goes on from
    the other write."""
    ids = discovered(store, 2)
    rival_url = store_url

    def observe(ctx: HookContext) -> Evidence:
        if ctx.item.id == ids[0]:
            other = open_store(rival_url)
            try:
                item = other.get(ctx.item.id)
                assert item is not None
                command = Observe(item.lease_owner or "", item.lease_token, {"rival": 1}, T0)
                assert other.apply(decide_at(item, command, T0))
            finally:
                other.close()
        return Evidence({"mine": 1})

    worker = Worker(store, app_of(observe), concurrency=2, lockstep=True)
    drain(worker)
    history = store.history(ids[0])
    observes = [e for e in history if e.command == "observe"]
    assert len(observes) == 1 and observes[0].actor is not None
    item = store.get(ids[0])
    assert item is not None and item.doc("evidence")["data"] == {"rival": 1}
    assert worker.refusals >= 1
    assert worker.transitions == 3  # the other item's two, and this one's propose


class Broken:
    """The store, whose group writes raise what no reconnect rule covers (a bug)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def apply_many(self, decisions: Any) -> Any:
        raise RuntimeError("a bug in a group write")


def test_a_group_write_that_raised_is_raised_in_the_workers_loop(store: Store) -> None:
    discovered(store, 2)
    worker = Worker(
        cast(Store, Broken(store)), app_of(lambda ctx: Evidence({})), batch=2, lockstep=True
    )
    end = time.monotonic() + 120
    with pytest.raises(RuntimeError, match="a bug in a group write"):
        while time.monotonic() < end:
            worker.tick()


# --- the checks before acting, read a round at a time ------------------------------------


def test_the_checks_before_acting_are_read_a_round_at_a_time(store: Store) -> None:
    """Every check before acting of a lockstep worker's items is read through
    ``guard_reads_many`` (a round's in one snapshot; on PostgreSQL one statement), never one
    by one, and every item acts twice, checked each time."""
    ids = discovered(store, 8)
    executed: list[str] = []
    reads = Reads(store)
    app = acting_app(lambda ctx: Proposal("tidy", {}), executed)
    worker = Worker(cast(Store, reads), app, batch=N, lockstep=True)
    drain(worker)
    assert states(store, ids) == [State.COMPLETED] * 8 and sorted(executed) == ids
    assert worker.lockstep is not None
    checks = sorted(reads.alone + [i for group in reads.together for i in group])
    assert checks == sorted(ids * 2)  # before it executes and before it reads back
    assert not reads.alone and worker.lockstep.read_groups == len(reads.together)
    assert all(len(set(group)) == len(group) for group in reads.together)
    for item_id in ids:
        item = store.get(item_id)
        assert item is not None and verify_item(item, store.history(item_id)) == []


def test_a_history_edited_before_its_check_is_never_acted_on(store: Store, store_url: str) -> None:
    """A dishonest hook rewrites its own item's first event by SQL before the item acts: the
    check before acting (read with the round's others) finds it, and that item never
    executes; the others complete."""
    ids = discovered(store, 4)
    executed: list[str] = []

    def propose(ctx: HookContext) -> Proposal:
        if ctx.item.id == ids[1]:
            edit_first_event(store_url, ctx.item.id)
        return Proposal("tidy", {})

    drain(Worker(store, acting_app(propose, executed), batch=N, lockstep=True))
    assert ids[1] not in executed and sorted(executed) == sorted(set(ids) - {ids[1]})
    assert states(store, ids) == [
        State.COMPLETED,
        State.EXCEPTION,
        State.COMPLETED,
        State.COMPLETED,
    ]


def test_a_read_group_that_raised_is_raised_in_the_workers_loop(store: Store) -> None:
    class Unreadable(Reads):
        def guard_reads_many(self, item_ids: Any) -> Any:
            raise RuntimeError("a bug in a read group")

    discovered(store, 2)
    app = acting_app(lambda ctx: Proposal("tidy", {}), [])
    worker = Worker(cast(Store, Unreadable(store)), app, batch=2, lockstep=True)
    end = time.monotonic() + 120
    with pytest.raises(RuntimeError, match="a bug in a read group"):
        while time.monotonic() < end:
            worker.tick()
