"""The parts of a lockstep worker with items claimed ahead (``runtime/hook_threads.py`` and the
driver in ``runtime/lockstep.py``) that the whole-worker tests do not pin down: the places for
hooks given first come first served, and once only by a hook that ends after its time; hook
threads reused once idle and stopped on close; the jobs' thread and what it hands back; a group
read or write in flight gathering the next group; a driver that waits when all it can do is
wait; a failed or cancelled hook's answer.

No assertion depends on how fast the machine is: threads meet at barriers or wait for events
the test sets once it has seen what it checks, and every wait has a generous deadline that only
a broken driver reaches. The driver's greenlets run on the test's own thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import queue
import threading
import time
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any, cast

import pytest

from stopline import App, Automation, Evidence, ReportForReview
from stopline.core.decision import Decision
from stopline.runtime import lockstep as lockstep_module
from stopline.runtime.automation import HookContext
from stopline.runtime.hook_threads import Call, HookThreads, Job, JobThread, Places, future_answer
from stopline.runtime.hooks import HookTimeout
from stopline.runtime.lockstep import Lockstep
from stopline.runtime.worker import Worker
from stopline.store import Store

from .acting import discovered, drain

DEADLINE = 30.0  # seconds: only a driver that is broken takes this long
HELD = 4 * DEADLINE  # a hook held by the test outlasts any deadline the test waits for


def run_until(lockstep: Lockstep, done: Callable[[], bool], what: str) -> None:
    """Pump (waiting a little each round when only waiting is left) until ``done()``."""
    end = time.monotonic() + DEADLINE
    while not done():
        assert time.monotonic() < end, f"never {what}"
        lockstep.pump()


def started(lockstep: Lockstep, store: Store, ids: list[str], body: Callable[[str], Any]) -> None:
    """``body(item_id)`` started as each item's steps, in the order of ``ids``."""
    for item_id in ids:
        item = store.get(item_id)
        assert item is not None
        lockstep.start(item, partial(body, item_id))


# --- the parts on their own ------------------------------------------------------------------


def test_places_go_first_come_first_served_and_count_what_is_held() -> None:
    places = Places(2)
    began: list[str] = []
    for key in "abcd":
        places.enter(partial(began.append, key))
    assert began == ["a", "b"] and (places.held, places.queued) == (2, 2)
    places.leave()  # the place goes to the first one queued, still held
    assert began == ["a", "b", "c"] and (places.held, places.queued) == (2, 1)
    places.leave()
    assert began == ["a", "b", "c", "d"] and (places.held, places.queued) == (2, 0)
    places.leave()
    assert (places.held, places.queued) == (1, 0)
    places.enter(partial(began.append, "e"))  # a place is free: it starts at once
    assert began[-1] == "e" and (places.held, places.queued) == (2, 0)
    places.leave()
    places.leave()
    assert (places.held, places.queued) == (0, 0)


def test_a_hook_thread_is_reused_once_idle_even_by_the_call_its_end_starts() -> None:
    """Three calls, each submitted by the end of the one before (as a hook that ends starts the
    next one queued): one thread runs them all. Two calls at once get two threads; on close
    the idle threads stop and none is counted any more."""
    ended: queue.SimpleQueue[Any] = queue.SimpleQueue()
    threads = HookThreads(ended)
    ran: list[threading.Thread] = []

    def record() -> None:
        ran.append(threading.current_thread())

    third = Call(record, (), 3)
    second = Call(record, (), 2, partial(threads.submit, third))
    threads.submit(Call(record, (), 1, partial(threads.submit, second)))
    assert [ended.get(timeout=DEADLINE) for _ in range(3)] == [1, 2, 3]
    assert len(set(ran)) == 1 and threads.threads == 1

    both = threading.Barrier(2)  # passed only by two calls running at once

    def meet() -> None:
        ran.append(threading.current_thread())
        both.wait(DEADLINE)

    calls = [Call(meet, (), 4), Call(meet, (), 5)]
    for call in calls:
        threads.submit(call)
    assert sorted(ended.get(timeout=DEADLINE) for _ in calls) == [4, 5]
    assert [call.error for call in calls] == [None, None]
    assert threads.threads == 2 and len(set(ran)) == 2
    threads.close()
    assert threads.threads == 0
    for thread in set(ran):
        thread.join(DEADLINE)
        assert not thread.is_alive()


def test_the_jobs_thread_runs_jobs_in_turn_off_the_callers_thread_and_stops_on_close() -> None:
    ended: queue.SimpleQueue[Any] = queue.SimpleQueue()
    jobs = JobThread(ended)
    where: list[threading.Thread] = []

    def tenfold(values: list[int]) -> list[int]:
        where.append(threading.current_thread())
        return [v * 10 for v in values]

    def away(values: list[int]) -> list[int]:
        raise ConnectionError("server closed the connection unexpectedly")

    done, failed = Job(tenfold, [("a", 1), ("b", 2)]), Job(away, [("c", 3)])
    jobs.submit(done)
    jobs.submit(failed)
    assert [ended.get(timeout=DEADLINE) for _ in range(2)] == [done, failed]
    assert (done.result, done.error) == ([10, 20], None)
    assert failed.result is None and isinstance(failed.error, ConnectionError)
    assert where and threading.current_thread() not in where
    jobs.close()
    where[0].join(DEADLINE)
    assert not where[0].is_alive()


def test_a_cancelled_future_answers_with_its_cancellation() -> None:
    cancelled: concurrent.futures.Future[Any] = concurrent.futures.Future()
    assert cancelled.cancel()
    result, error = future_answer(cancelled)
    assert result is None and isinstance(error, concurrent.futures.CancelledError)
    answered: concurrent.futures.Future[Any] = concurrent.futures.Future()
    answered.set_result(("ok", None))
    assert future_answer(answered) == ("ok", None)


# --- the driver --------------------------------------------------------------------------------


def test_a_hook_that_ends_after_its_time_does_not_give_its_place_a_second_time(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One place, two items queued: ``a``'s hook runs past its time, its place goes to ``b``;
    when ``a``'s abandoned hook ends at last, ``c`` still waits for ``b``'s place."""
    handled: queue.SimpleQueue[Any] = queue.SimpleQueue()

    class Told(Call):
        """A hook's call that tells which function it ran once its end was handled."""

        def __init__(self, function: Any, args: Any, ticket: int, ended: Any = None) -> None:
            def after() -> None:
                if ended is not None:
                    ended()
                handled.put(function)

            super().__init__(function, args, ticket, after)

    monkeypatch.setattr(lockstep_module, "Call", Told)
    ids = discovered(store, 3)
    lockstep = Lockstep(store, 1, 1, {"auto": None}, ahead=2)
    release = {i: threading.Event() for i in ids}
    began = {i: threading.Event() for i in ids}
    hooks = {}
    outcomes: dict[str, object] = {}

    for item_id in ids:

        def hook(item_id: str = item_id) -> str:
            began[item_id].set()
            assert release[item_id].wait(HELD)
            return item_id

        hooks[item_id] = hook

    def body(item_id: str) -> None:
        timeout = 0.5 if item_id == ids[0] else DEADLINE
        try:
            outcomes[item_id] = lockstep.runner.run(hooks[item_id], (), timeout)[0]
        except HookTimeout:
            outcomes[item_id] = "timed out"

    started(lockstep, store, ids, body)
    run_until(
        lockstep, lambda: began[ids[1]].is_set() and ids[0] in outcomes, "the place passed on"
    )
    assert outcomes == {ids[0]: "timed out"} and lockstep.places.queued == 1
    release[ids[0]].set()
    assert handled.get(timeout=DEADLINE) is hooks[ids[0]]  # its end seen: the place is b's
    assert not began[ids[2]].is_set()
    assert (lockstep.places.held, lockstep.places.queued) == (1, 1)
    release[ids[1]].set()
    release[ids[2]].set()
    run_until(lockstep, lambda: not lockstep.in_flight, "every item ended")
    assert outcomes == {ids[0]: "timed out", ids[1]: ids[1], ids[2]: ids[2]}
    assert (lockstep.places.held, lockstep.places.queued) == (0, 0)
    lockstep.drain()


def test_a_read_on_a_hook_thread_neither_waits_for_a_place_nor_gives_one(store: Store) -> None:
    """One place, held by ``a``'s hook, ``c``'s hook queued for it: ``b``'s read of the store,
    run on a hook thread (as a PostgreSQL read is), runs meanwhile without a place, and its
    end hands none to ``c``."""
    ids = discovered(store, 3)
    a, b, c = ids
    lockstep = Lockstep(store, 1, 1, {"auto": None}, wait_reads=True, ahead=2)
    release, began = threading.Event(), threading.Event()
    outcomes: dict[str, object] = {}

    def holding() -> str:
        assert release.wait(HELD)
        return a

    def body(item_id: str) -> None:
        if item_id == a:
            outcomes[a] = lockstep.runner.run(holding, (), DEADLINE)[0]
        elif item_id == b:
            found = lockstep.read(store.get, b)
            outcomes[b] = found.id if found is not None else None
        else:
            outcomes[c] = lockstep.runner.run(began.set, (), DEADLINE)[1]

    started(lockstep, store, ids, body)
    run_until(lockstep, lambda: b in outcomes, "the read answered")
    assert outcomes == {b: b} and not began.is_set()
    assert (lockstep.places.held, lockstep.places.queued) == (1, 1)
    release.set()
    run_until(lockstep, lambda: not lockstep.in_flight, "every item ended")
    assert outcomes == {a: a, b: b, c: None} and began.is_set()
    assert (lockstep.places.held, lockstep.places.queued) == (0, 0)
    lockstep.drain()


def test_an_async_hook_the_event_loop_cannot_take_is_its_items_failure_and_gives_its_place(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each item's answer is the failure; no place is left held, and the hook's own coroutine
    is closed, not left for the collector to find never awaited."""
    ids = discovered(store, 3)

    def no_loop() -> Any:
        raise RuntimeError("no event loop")

    async def hook() -> str:
        return "ok"  # pragma: no cover - never sent to a loop

    monkeypatch.setattr(lockstep_module, "event_loop", no_loop)
    lockstep = Lockstep(store, 1, 1, {"auto": None}, ahead=2)
    outcomes: dict[str, object] = {}

    def body(item_id: str) -> None:
        outcomes[item_id] = lockstep.runner.run(hook, (), DEADLINE)[1]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started(lockstep, store, ids, body)
        run_until(lockstep, lambda: not lockstep.in_flight, "every item ended")
        for error in outcomes.values():  # the frames that held each coroutine let go
            if isinstance(error, BaseException):
                error.__traceback__ = None
        gc.collect()
    assert sorted(outcomes) == ids
    assert all(isinstance(error, RuntimeError) for error in outcomes.values()), outcomes
    assert (lockstep.places.held, lockstep.places.queued) == (0, 0)
    assert not [w for w in caught if "never awaited" in str(w.message)]
    lockstep.drain()


class Held:
    """The store, whose first group read or write waits until ``release`` is set."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.groups: list[list[Any]] = []
        self.entered, self.release = threading.Event(), threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def hold(self, values: list[Any]) -> None:
        self.groups.append(list(values))
        if len(self.groups) == 1:
            self.entered.set()
            assert self.release.wait(DEADLINE)

    def guard_reads_many(self, item_ids: Any) -> Any:
        self.hold(item_ids)
        return self.store.guard_reads_many(item_ids)

    def apply_many(self, decisions: Any) -> list[bool]:
        self.hold(decisions)
        return [True] * len(decisions)


@pytest.mark.parametrize("kind", ["read", "write"])
def test_what_waits_while_a_group_is_in_flight_is_the_next_group(store: Store, kind: str) -> None:
    """Rounds of one item (room for two): the first item's group is held on the jobs' thread
    while the next two rounds run; their items wait for it, and go as one group once it is
    back."""
    ids = discovered(store, 3)
    held = Held(store)
    lockstep = Lockstep(cast(Store, held), 2, 4, {"auto": None})
    outcomes: dict[str, object] = {}

    def body(item_id: str) -> None:
        if kind == "read":
            outcomes[item_id] = lockstep.guard_reads(item_id, history=True, registry=True)
        else:
            outcomes[item_id] = lockstep.apply(cast(Decision, item_id))

    started(lockstep, store, ids, body)
    lockstep.pump(wait=False)
    assert held.entered.wait(DEADLINE)
    lockstep.pump(wait=False)
    lockstep.pump(wait=False)
    held.release.set()
    run_until(lockstep, lambda: not lockstep.in_flight, "every item ended")
    lockstep.drain()
    assert held.groups == [[ids[0]], ids[1:]]
    if kind == "read":
        assert outcomes == {i: store.guard_reads(i, history=True, registry=True) for i in ids}
        assert (lockstep.read_groups, lockstep.largest_read, lockstep.groups) == (2, 2, 0)
    else:
        assert outcomes == {i: True for i in ids}
        assert (lockstep.groups, lockstep.largest, lockstep.read_groups) == (2, 2, 0)


def test_a_round_with_only_a_hook_to_wait_for_waits_for_it(store: Store) -> None:
    """The one item's hook never answers and times out after two seconds: rounds that wait
    for it (as they must, having nothing else to do) see that within a thousand rounds;
    rounds that returned at once would all be over long before."""
    ids = discovered(store, 1)
    never = threading.Event()
    lockstep = Lockstep(store, 1, 1, {"auto": None})
    outcomes: list[str] = []

    def body(item_id: str) -> None:
        try:
            lockstep.runner.run(never.wait, (DEADLINE,), 2.0)
        except HookTimeout:
            outcomes.append("timed out")

    started(lockstep, store, ids, body)
    try:
        rounds = 0
        while lockstep.in_flight and rounds < 1000:
            lockstep.pump()
            rounds += 1
        assert outcomes == ["timed out"] and not lockstep.in_flight
    finally:
        never.set()
    lockstep.drain()


# --- a whole worker ---------------------------------------------------------------------------


def test_a_closed_worker_leaves_no_hook_or_jobs_thread_running(store: Store) -> None:
    ids = discovered(store, 8)
    hook_threads: set[threading.Thread] = set()
    job_threads: set[threading.Thread] = set()
    apply_many = store.apply_many

    def observe(ctx: HookContext) -> Evidence:
        hook_threads.add(threading.current_thread())
        return Evidence({"ok": True})

    def recording(decisions: Any) -> list[bool]:
        job_threads.add(threading.current_thread())
        return apply_many(decisions)

    store.apply_many = recording  # type: ignore[method-assign]
    app = App([Automation("auto", lambda ctx: [], observe, lambda ctx: ReportForReview({}))])
    worker = Worker(store, app, concurrency=2, batch=2, ahead=2, lockstep=True)
    drain(worker)  # closes the worker
    assert all(store.get(i) is not None for i in ids) and worker.transitions == 16
    assert hook_threads and job_threads
    for thread in hook_threads | job_threads:
        thread.join(DEADLINE)
        assert not thread.is_alive(), thread.name


class _Told(HookThreads):
    """Hook threads that tell the test once a call's end is on the driver's queue."""

    queued = threading.Event()

    def __init__(self, ended: Any) -> None:
        told = self.queued

        class Queue:
            def put(self, ticket: Any) -> None:
                ended.put(ticket)
                told.set()

        super().__init__(cast(Any, Queue()))


@pytest.mark.parametrize("kind", ["plain", "async"])
def test_a_hook_that_ended_past_its_time_while_the_driver_was_busy_is_a_timeout(
    store: Store, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The driver sees a hook's end only when it next collects. A hook that returned after its
    time while the driver was busy elsewhere (its claim waiting for the database, say) is a
    timeout, as one step at a time and step threads make it: its answer is never the item's."""
    told = threading.Event()
    monkeypatch.setattr(_Told, "queued", told)
    monkeypatch.setattr(lockstep_module, "HookThreads", _Told)
    (item_id,) = discovered(store, 1)
    lockstep = Lockstep(store, 1, 1, {"auto": None})
    returned = threading.Event()
    outcomes: dict[str, object] = {}

    def plain() -> str:
        time.sleep(0.3)  # past its 0.1 s
        returned.set()
        return "late"

    async def waits() -> str:
        await asyncio.sleep(0.3)
        returned.set()
        return "late"

    def body(item_id: str) -> None:
        try:
            outcomes[item_id] = lockstep.runner.run(plain if kind == "plain" else waits, (), 0.1)[0]
        except HookTimeout:
            outcomes[item_id] = "timed out"

    started(lockstep, store, [item_id], body)
    lockstep.pump(wait=False)  # the hook starts; the driver (this thread) is then busy
    assert returned.wait(DEADLINE)
    if kind == "plain":
        assert told.wait(DEADLINE)  # its end is queued before the driver looks again
    else:  # the loop's thread lets the place go, then queues the end at once
        end = time.monotonic() + DEADLINE
        while lockstep.places.held:
            assert time.monotonic() < end
            time.sleep(0.01)
        time.sleep(0.2)
    run_until(lockstep, lambda: item_id in outcomes, "the hook's end handled")
    assert outcomes == {item_id: "timed out"}
    lockstep.drain()
