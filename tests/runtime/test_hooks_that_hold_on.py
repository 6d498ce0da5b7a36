"""Hooks that hold on to what they were given: none of them may stop a worker or the scheduler
from going on with everything else.

- An ``async def`` hook that blocks its thread (a blocking call where an ``await`` belonged)
  holds the one event loop every ``async`` hook of the process runs on. It is abandoned at its
  ``hook_timeout`` like any hook; the loop it holds is then retired, and later hooks run on a
  new one. (Before, every later ``async`` hook of the process timed out too, for as long as the
  first one held on.)
- A discovery hook runs within its automation's ``hook_timeout`` too; one that never returns
  is abandoned, writes nothing and leaves the other automations' discoveries to run. (Before,
  it had no time limit and held the scheduler, and with it the work loop of ``stopline run``.)
- A discovery hook that raises ``SystemExit`` (or any exception) has failed, and says so; it
  does not end the scheduler.

Nothing here is timed: a hook that holds on waits for an event the test sets at its end, and
every hook that must finish has a generous time limit.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from stopline import App, Automation, Evidence, Proposal, ReportForReview
from stopline.core.failures import HOOK_TIMEOUT
from stopline.core.policy import RetryPolicy
from stopline.runtime.automation import HookContext
from stopline.runtime.hooks import HookRunner, HookTimeout, event_loop
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.watch import HookFailures
from stopline.runtime.worker import Worker
from stopline.store import Store

T0 = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
HOLD = 60.0  # the most a holding hook waits for the test to let it go
GENEROUS = 30.0  # the time limit of a hook that must finish


def test_an_async_hook_that_blocks_the_loop_leaves_later_async_hooks_running(
    release: threading.Event,
) -> None:
    async def blocks(ctx: Any) -> str:
        release.wait(HOLD)  # a blocking call inside async def: the loop's thread is held
        return "late"

    async def fine(ctx: Any) -> str:
        await asyncio.sleep(0)
        return "on time"

    held = event_loop()
    runner = HookRunner()
    with pytest.raises(HookTimeout):
        runner.run(blocks, (None,), 0.2)
    assert runner.run(fine, (None,), GENEROUS) == ("on time", None)
    assert HookRunner().run(fine, (None,), GENEROUS) == ("on time", None)
    assert event_loop() is not held and event_loop().is_running()
    release.set()


def test_an_async_hook_that_only_waits_past_its_time_keeps_the_loop() -> None:
    """A hook that awaits past its time is cancelled; its loop answers, so it stays."""

    async def waits(ctx: Any) -> str:
        await asyncio.sleep(HOLD)
        return "late"

    loop = event_loop()
    with pytest.raises(HookTimeout):
        HookRunner().run(waits, (None,), 0.05)
    assert event_loop() is loop


def app_of(**discoveries: Callable[[HookContext], Any]) -> App:
    return App(
        [
            Automation(
                name,
                discover,
                lambda ctx: Evidence({"seen": True}),
                lambda ctx: Proposal("publish", {}),
                every=3600,
                hook_timeout=0.2 if name.startswith("stuck") else GENEROUS,
            )
            for name, discover in discoveries.items()
        ]
    )


def fired(
    store: Store, app: App, failures: HookFailures | None = None
) -> dict[str, tuple[int, str | None]]:
    scheduler = Scheduler(store, app, clock=lambda: T0, failures=failures)
    scheduler.register()
    return {f.automation: (f.new, f.failure) for f in scheduler.tick(force=True)}


def test_a_discovery_that_never_returns_is_abandoned_and_the_others_run(
    store: Store, release: threading.Event
) -> None:
    def stuck_plain(ctx: HookContext) -> list[str]:
        release.wait(HOLD)
        return ["never"]

    async def stuck_async(ctx: HookContext) -> list[str]:
        await asyncio.sleep(HOLD)
        return ["never"]

    async def stuck_paging(ctx: HookContext) -> Any:
        yield "first"
        await asyncio.sleep(HOLD)  # the second page never comes
        yield "second"

    def fine(ctx: HookContext) -> list[str]:
        return ["a", "b"]

    app = app_of(stuck1=stuck_plain, stuck2=stuck_async, stuck3=stuck_paging, fine=fine)
    failures = HookFailures()
    assert fired(store, app, failures) == {
        "stuck1": (0, HOOK_TIMEOUT),
        "stuck2": (0, HOOK_TIMEOUT),
        "stuck3": (0, HOOK_TIMEOUT),
        "fine": (2, None),
    }
    assert sorted(i.key for i in store.list_items()) == ["a", "b"]
    for name in ("stuck1", "stuck2", "stuck3"):
        assert store.last_discovery(name) is None  # tried again at the next tick
    assert failures.lines == [
        f"discovery of {name} ran past its hook_timeout of 0.2 s"
        for name in ("stuck1", "stuck2", "stuck3")
    ]
    release.set()


def test_a_discovery_that_raises_system_exit_has_failed_and_the_scheduler_goes_on(
    store: Store,
) -> None:
    def leaves(ctx: HookContext) -> list[str]:
        raise SystemExit(3)

    def fine(ctx: HookContext) -> list[str]:
        return ["a"]

    assert fired(store, app_of(leaves=leaves, fine=fine)) == {
        "leaves": (0, "SystemExit"),
        "fine": (1, None),
    }
    assert store.last_discovery("leaves") is None


def test_a_worker_goes_on_with_its_async_hooks_after_one_held_the_loop(
    store: Store, release: threading.Event
) -> None:
    """Two items at once, each with an ``async`` observe; the first attempt of ``a`` blocks
    the loop. Whatever was sent to that loop times out and is retried within the budget, on
    a new loop: both items reach review. (Before, every later attempt went to the held loop
    and timed out too, and both items spent their budgets.)"""

    async def observe(ctx: HookContext) -> Evidence:
        assert ctx.item is not None
        if ctx.item.key == "a" and ctx.item.attempts == 1:
            release.wait(HOLD)  # blocks the loop's thread
        await asyncio.sleep(0)
        return Evidence({"key": ctx.item.key})

    app = App(
        [
            Automation(
                "auto",
                lambda ctx: ["a", "b"],
                observe,
                lambda ctx: ReportForReview({"ok": True}),
                hook_timeout=3,
                retry=RetryPolicy(max_attempts=4, base_delay=0.05, max_delay=0.05),
            )
        ]
    )
    Scheduler(store, app).tick(force=True)
    worker = Worker(store, app, concurrency=2, batch=2)
    end = time.monotonic() + 120
    while time.monotonic() < end and any(
        i.state.is_work for i in store.list_items(automation="auto")
    ):
        if not worker.tick():
            time.sleep(0.01)
    worker.close()
    items = {i.key: i for i in store.list_items(automation="auto")}
    assert {k: i.state.value for k, i in items.items()} == {
        "a": "ready_for_review",
        "b": "ready_for_review",
    }
    log = items["a"].attempt_log
    assert log[0]["class"] == HOOK_TIMEOUT, log
    release.set()


def test_a_discovered_entry_whose_str_never_returns_is_abandoned_with_its_discovery(
    store: Store, release: threading.Event
) -> None:
    """An entry is read (its key as text, its input checked and copied) within the discovery's
    time: an entry whose ``__str__`` holds on is the discovery's timeout, not the scheduler's
    hang."""

    class Holds:
        def __str__(self) -> str:
            release.wait(HOLD)
            return "late"

    def stuck_entry(ctx: HookContext) -> list[Any]:
        return ["first", Holds()]

    def fine(ctx: HookContext) -> list[str]:
        return ["a"]

    assert fired(store, app_of(stuck=stuck_entry, fine=fine)) == {
        "stuck": (0, HOOK_TIMEOUT),
        "fine": (1, None),
    }
    assert [i.key for i in store.list_items()] == ["a"]  # nothing of the stuck discovery
    release.set()
