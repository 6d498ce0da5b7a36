"""Several items at once in one worker (runtime/slots.py, group_commit.py, lease.Renewer) and
``async def`` hooks (runtime/hooks.py), in process, on both stores.

No assertion here depends on how fast the machine is: overlap is shown by hooks that wait for
each other (a barrier), not by timing, and every wait has a generous deadline.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from helpers import T0, decide_at
from stopline import App, Automation, Evidence, ReportForReview
from stopline.core.commands import Discover, Observe
from stopline.core.decision import Decision
from stopline.core.records import Item
from stopline.runtime.automation import HookContext
from stopline.runtime.discovering import list_discovered
from stopline.runtime.group_commit import GroupCommitter
from stopline.runtime.hooks import HookRunner, HookTimeout, event_loop, is_async
from stopline.runtime.lease import LeaseHolder, Renewer
from stopline.runtime.slots import Slots
from stopline.runtime.worker import Worker
from stopline.store import Store

# --- async hooks ----------------------------------------------------------------------------


def test_an_async_hook_returns_its_value_and_its_exception_is_a_value() -> None:
    async def fine(x: int) -> int:
        await asyncio.sleep(0)
        return x + 1

    async def broken() -> None:
        raise ValueError("no")

    runner = HookRunner()
    assert runner.run(fine, (1,), 30) == (2, None)
    result, error = runner.run(broken, (), 30)
    assert result is None and isinstance(error, ValueError)


def test_an_object_whose_call_is_async_runs_as_an_async_hook() -> None:
    """A hook may be an instance of a class with an ``async def __call__`` (a client object
    holding its connection): it runs on the event loop, and its answer is the value it
    returns, not a coroutine (which would be recorded as an invalid output)."""

    class Client:
        async def __call__(self, x: int) -> int:
            await asyncio.sleep(0)
            return x * 2

    client = Client()
    assert is_async(client) and not is_async(lambda x: x)
    assert HookRunner().run(client, (21,), 30) == (42, None)


def test_an_async_hook_that_fails_before_it_starts_is_its_failure() -> None:
    """Called with arguments it does not take, an ``async def`` hook raises before any
    coroutine exists: that is the hook's failure, a value, like any exception it raises."""

    async def takes_nothing() -> None:
        return None

    result, error = HookRunner().run(takes_nothing, ("ctx",), 30)
    assert result is None and isinstance(error, TypeError)


def test_an_async_hook_that_raises_system_exit_leaves_the_event_loop_serving() -> None:
    async def leave() -> None:
        raise SystemExit(3)

    async def fine() -> str:
        return "still here"

    runner = HookRunner()
    _, error = runner.run(leave, (), 30)
    assert isinstance(error, SystemExit)
    assert runner.run(fine, (), 30) == ("still here", None)


def test_an_async_hook_past_its_time_is_cancelled_and_its_answer_dropped() -> None:
    cancelled = threading.Event()

    async def stuck() -> str:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    runner = HookRunner()
    with pytest.raises(HookTimeout):
        runner.run(stuck, (), 0.05)
    assert cancelled.wait(60) and runner.abandoned == 1


def test_discovery_of_every_kind_is_listed_to_its_end() -> None:
    async def gen(n: int) -> Any:
        for i in range(n):
            yield f"k{i}"

    async def coro(n: int) -> list[str]:
        return [f"k{i}" for i in range(n)]

    def plain(n: int) -> Any:
        yield from (f"p{i}" for i in range(n))

    runner = HookRunner()
    assert list_discovered(runner, lambda n: [n], 2, 30) == ([2], None)
    assert list_discovered(runner, coro, 2, 30) == (["k0", "k1"], None)
    assert list_discovered(runner, gen, 3, 30) == (["k0", "k1", "k2"], None)
    assert list_discovered(runner, plain, 2, 30) == (["p0", "p1"], None)
    assert event_loop().is_running()


# --- the store: claims and commits in groups --------------------------------------------------


def discovered(store: Store, n: int, automation: str = "auto") -> list[str]:
    ids = [f"i{k:03d}" for k in range(n)]
    for k, item_id in enumerate(ids):
        store.insert(decide_at(None, Discover(item_id, automation, f"k{k}", {}), T0))
    return ids


def observed(item: Item, worker: str, n: int = 1) -> Decision:
    return decide_at(item, Observe(worker, item.lease_token, {"n": n}, T0), T0)


def test_a_batch_claim_takes_each_item_once_with_its_own_token(store: Store) -> None:
    ids = discovered(store, 7)
    first = store.claim_batch("w1", T0, 30, limit=4)
    second = store.claim_batch("w2", T0, 30, limit=4)
    assert len(first) == 4 and len(second) == 3
    assert sorted(i.id for i in first + second) == ids
    for item in first + second:
        assert item.attempts == 1 and item.lease_token == 1
        assert item.lease_owner == ("w1" if item in first else "w2")
    assert store.claim_batch("w3", T0, 30, limit=4) == []


def test_a_lost_compare_and_set_refuses_that_item_only_never_the_group(store: Store) -> None:
    discovered(store, 3)
    a, b, c = store.claim_batch("w1", T0, 30, limit=3)
    rival = observed(b, "w1", n=99)
    assert store.apply(rival)  # another write to b comes first
    group = [observed(a, "w1"), observed(b, "w1"), observed(c, "w1")]
    assert store.apply_many(group) == [True, False, True]
    assert store.get(a.id) == group[0].after and store.get(c.id) == group[2].after
    assert store.get(b.id) == rival.after
    assert [e.seq for e in store.history(b.id)] == [1, 2]  # no event of the lost decision


def test_the_group_committer_writes_what_waits_together_and_says_per_item(store: Store) -> None:
    discovered(store, 12)
    items = store.claim_batch("w1", T0, 30, limit=12)
    committer = GroupCommitter(store, 5)
    stale = items[3]
    assert store.apply(observed(stale, "w1", n=7))
    results: dict[str, bool] = {}
    start = threading.Barrier(len(items))

    def write(item: Item) -> None:
        start.wait(60)
        results[item.id] = committer.apply(observed(item, "w1"))

    threads = [threading.Thread(target=write, args=(i,)) for i in items]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == {i.id: i.id != stale.id for i in items}
    assert committer.largest <= 5 and committer.groups >= 3


class Away:
    """A store whose group writes never get an answer (the database went away mid-commit)."""

    def apply_many(self, decisions: list[Decision]) -> list[bool]:
        raise ConnectionError("server closed the connection unexpectedly")


def test_a_failed_group_write_reaches_every_decision_of_the_group(store: Store) -> None:
    """Every caller whose decision was in a group that failed gets the failure itself, never
    an answer: ``False`` would say another write came first, and the worker would not read
    its item back to learn whether the commit went through."""
    discovered(store, 6)
    items = store.claim_batch("w1", T0, 30, limit=6)
    committer = GroupCommitter(cast(Store, Away()), 3)
    outcomes: dict[str, object] = {}
    start = threading.Barrier(len(items))

    def write(item: Item) -> None:
        start.wait(60)
        try:
            outcomes[item.id] = committer.apply(observed(item, "w1"))
        except ConnectionError as error:
            outcomes[item.id] = error

    threads = [threading.Thread(target=write, args=(i,), daemon=True) for i in items]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(outcomes) == sorted(i.id for i in items)
    assert all(isinstance(o, ConnectionError) for o in outcomes.values()), outcomes
    assert committer.groups >= 2 and committer.largest <= 3


# --- a worker with several items in flight ----------------------------------------------------


class Gate:
    """Counts the hooks in flight; each waits until ``need`` are in flight at once (or the
    deadline passes), so a run shows the most it had at once without timing anything."""

    def __init__(self, need: int) -> None:
        self.need = need
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.reached = threading.Event()
        self.paired = threading.Event()  # two were in flight at once, at least once

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            if self.now >= self.need:
                self.reached.set()
            if self.now >= 2:
                self.paired.set()

    def leave(self) -> None:
        with self.lock:
            self.now -= 1

    def wait_in(self, event: threading.Event, timeout: float) -> bool:
        """Counted in flight while waiting for ``event`` (at most ``timeout`` seconds)."""
        self.enter()
        try:
            return event.wait(timeout)
        finally:
            self.leave()


def app_with(observe: Callable[..., Any], *, concurrency: int | None = None) -> App:
    def propose(ctx: HookContext) -> ReportForReview:
        return ReportForReview({"ok": True})

    return App(
        [
            Automation(
                "auto",
                lambda ctx: [],
                observe,
                propose,
                concurrency=concurrency,
                hook_timeout=120,
            )
        ]
    )


def drain(worker: Worker, n: int, deadline: float = 120) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if worker.tick():
            continue
        if len(worker.store.list_items(state="ready_for_review", limit=n + 1)) >= n:
            break
        time.sleep(0.01)
    worker.close()


@pytest.mark.parametrize("kind", ["thread", "async"])
@pytest.mark.parametrize(("concurrency", "batch"), [(6, 1), (6, 3), (1, 6)])
def test_a_worker_runs_up_to_its_concurrency_at_once_and_no_more(
    store: Store, kind: str, concurrency: int, batch: int
) -> None:
    slots = max(concurrency, batch)
    gate = Gate(slots)

    def observe(ctx: HookContext) -> Evidence:
        gate.wait_in(gate.reached, 30)
        return Evidence({"k": ctx.item.key if ctx.item else ""})

    async def observe_async(ctx: HookContext) -> Evidence:
        gate.enter()
        try:
            for _ in range(3000):
                if gate.reached.is_set():
                    break
                await asyncio.sleep(0.01)
        finally:
            gate.leave()
        return Evidence({"k": ctx.item.key if ctx.item else ""})

    app = app_with(observe if kind == "thread" else observe_async)
    n = 3 * slots
    discovered(store, n)
    worker = Worker(store, app, concurrency=concurrency, batch=batch, clock=now_utc)
    drain(worker, n)
    assert gate.most == slots
    done = store.list_items(state="ready_for_review", limit=n + 1)
    assert len(done) == n and all(i.attempts == 1 for i in done)
    assert worker.refusals == 0 and worker.claims == n and worker.transitions == 2 * n


class Through:
    """The store, each call passed on but those a subclass answers itself."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


class ClaimSizes(Through):
    """The store, with the most items each claim of the worker asked for."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.limits: list[int] = []

    def claim_checked(self, *args: Any, limit: int = 1, **kwargs: Any) -> Any:
        self.limits.append(limit)
        return self.store.claim_checked(*args, limit=limit, **kwargs)


def test_a_claim_takes_at_most_the_batch_however_much_room_there_is(store: Store) -> None:
    """``--batch`` bounds one claim, ``--concurrency`` what is in flight: with room for six
    and a batch of two, no claim asks for more than two items."""
    gate = Gate(6)

    def observe(ctx: HookContext) -> Evidence:
        gate.wait_in(gate.reached, 60)
        return Evidence({})

    discovered(store, 12)
    sizes = ClaimSizes(store)
    worker = Worker(cast(Store, sizes), app_with(observe), concurrency=6, batch=2, clock=now_utc)
    drain(worker, 12)
    assert gate.most == 6 and max(sizes.limits) == 2
    assert len(store.list_items(state="ready_for_review", limit=13)) == 12


class Broken(Through):
    """The store, whose group writes raise what no reconnect rule covers (a bug)."""

    def apply_many(self, decisions: Any) -> Any:
        raise RuntimeError("a bug in a group write")


def test_a_step_that_raised_stops_the_workers_loop_while_it_runs(store: Store) -> None:
    """A worker running several items at once raises in its loop what a step thread raised,
    at its next turn, not only when it is closed: the process ends and a person sees why."""
    discovered(store, 2)
    worker = Worker(
        cast(Store, Broken(store)), app_with(lambda ctx: Evidence({})), concurrency=2, batch=2
    )
    end = time.monotonic() + 120
    with pytest.raises(RuntimeError, match="a bug in a group write"):
        while time.monotonic() < end:
            worker.tick()
            time.sleep(0.01)


def test_a_step_that_raised_after_the_last_turn_is_raised_by_close(store: Store) -> None:
    """What a step still in flight raises while the worker closes is raised by ``close``."""
    discovered(store, 2)
    worker = Worker(
        cast(Store, Broken(store)), app_with(lambda ctx: Evidence({})), concurrency=2, batch=2
    )
    assert worker.tick()  # both claimed and started; no turn comes after
    with pytest.raises(RuntimeError, match="a bug in a group write"):
        worker.close()


def test_an_automation_limit_caps_its_items_in_flight(store: Store) -> None:
    gate = Gate(3)  # never reached: each hook waits out its second, two at a time

    def observe(ctx: HookContext) -> Evidence:
        gate.enter()
        try:
            gate.paired.wait(60)  # the first pair meets, however slowly the second starts
            gate.reached.wait(1.0)  # time for a third to get in, if the limit let it
        finally:
            gate.leave()
        return Evidence({})

    app = app_with(observe, concurrency=2)
    discovered(store, 8)
    worker = Worker(store, app, concurrency=8, batch=4, clock=now_utc)
    drain(worker, 8)
    assert gate.most == 2
    assert len(store.list_items(state="ready_for_review", limit=9)) == 8


def test_an_automation_at_its_limit_leaves_room_for_the_others(store: Store) -> None:
    """One automation at its limit holds back only its own items: the others are claimed
    while its item is in flight (each slow hook waits until the four fast ones have run),
    and none of its own (two slow items, a limit of one)."""
    fast_ran, count = Counter[str](), threading.Lock()
    all_fast = threading.Event()
    seen: list[bool] = []
    slow_in_flight = Gate(2)

    def slow(ctx: HookContext) -> Evidence:
        seen.append(slow_in_flight.wait_in(all_fast, 60))
        return Evidence({})

    def fast(ctx: HookContext) -> Evidence:
        with count:
            fast_ran["n"] += 1
            if fast_ran["n"] == 4:
                all_fast.set()
        return Evidence({})

    def propose(ctx: HookContext) -> ReportForReview:
        return ReportForReview({"ok": True})

    app = App(
        [
            Automation("slow", lambda ctx: [], slow, propose, concurrency=1, hook_timeout=120),
            Automation("fast", lambda ctx: [], fast, propose, hook_timeout=120),
        ]
    )
    for k in range(2):
        early = T0 - timedelta(minutes=1)  # due before the fast ones
        store.insert(decide_at(None, Discover(f"a-slow-{k}", "slow", f"s{k}", {}), early))
    for k in range(4):
        store.insert(decide_at(None, Discover(f"b-fast-{k}", "fast", f"f{k}", {}), T0))
    worker = Worker(store, app, concurrency=4, batch=4, clock=now_utc)
    drain(worker, 6)
    assert seen == [True, True] and slow_in_flight.most == 1
    assert len(store.list_items(state="ready_for_review", limit=7)) == 6


def test_what_a_step_thread_raised_is_raised_again_in_the_workers_loop(store: Store) -> None:
    """An error in a step (the database gone, a bug) is not lost with its thread: the worker's
    loop raises it, once, where the reconnect rules (or a crash that a person sees) apply."""
    discovered(store, 3)
    items = [i for i in (store.get(f"i{k:03d}") for k in range(3)) if i is not None]

    def run(item: Item) -> None:
        if item.id == "i001":
            raise ConnectionError("server closed the connection unexpectedly")

    slots = Slots(2, {}, run)
    for item in items:
        slots.start(item)
    slots.drain()
    assert slots.in_flight == 0
    with pytest.raises(ConnectionError, match="server closed"):
        slots.raise_failure()
    slots.raise_failure()  # raised once: the loop goes on after it


def now_utc() -> datetime:
    return datetime.now(UTC)


def test_the_renewer_keeps_every_lease_in_flight_alive(store: Store) -> None:
    """Three claims on a 0.6 s lease, held by one renewer: each lease end moves on, again and
    again, while it is held."""
    discovered(store, 3)
    now = now_utc()
    items = store.claim_batch("w1", now, 0.6, limit=3)
    renewer = Renewer(store, now_utc)
    holders = [LeaseHolder(i) for i in items]
    first_end = {i.id: i.lease_expires_at for i in items}
    with renewer.holding(holders[0], 0.6), renewer.holding(holders[1], 0.6):
        with renewer.holding(holders[2], 0.6):
            wait_until(lambda: all(moved(store, i, first_end, 2) for i in items))
        wait_until(lambda: all(moved(store, i, first_end, 4) for i in items[:2]))
    assert all(h.current().lease_expires_at != first_end[h.item.id] for h in holders)


def moved(store: Store, item: Item, first: dict[str, datetime | None], times: int) -> bool:
    now = store.get(item.id)
    start = first[item.id]
    assert now is not None and start is not None and now.lease_expires_at is not None
    return now.lease_expires_at >= start + timedelta(seconds=0.2 * times)


def wait_until(done: Callable[[], bool], deadline: float = 120) -> None:
    end = time.monotonic() + deadline
    while not done():
        assert time.monotonic() < end, "gave up waiting"
        time.sleep(0.05)


logging.getLogger("stopline.worker").setLevel(logging.ERROR)
