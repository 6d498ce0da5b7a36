"""``run`` (runtime/runner.py), in this process on both stores: when ``--once`` ends, what the
summary counts, the settings that reach the worker, and the process state it puts back."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

import pytest

from stopline.core.policy import RetryPolicy
from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import Evidence, ReportForReview, TransientError
from stopline.runtime.runner import run
from stopline.store import open_store


def _report(ctx: HookContext) -> ReportForReview:
    return ReportForReview({"summary": "fine"})


def _app(observe: Callable[[HookContext], Any], keys: list[str], **changes: Any) -> App:
    return App([Automation("ops", lambda ctx: keys, observe, _report, **changes)])


def _states(url: str) -> dict[str, int]:
    store = open_store(url)
    try:
        return {c.state: c.count for c in store.insights.count_by_state()}
    finally:
        store.close()


def _flaky(calls: list[str]) -> Callable[[HookContext], Evidence]:
    def observe(ctx: HookContext) -> Evidence:
        calls.append(ctx.item.key if ctx.item else "")
        if len(calls) == 1:
            raise TransientError("the API timed out")
        return Evidence({})

    return observe


def test_once_leaves_a_retry_due_beyond_the_linger_to_a_later_run(store_url: str) -> None:
    """The retry is due in thirty seconds, the linger is five: ``--once`` ends now, the retry
    untried (it would otherwise wait for it and try it)."""
    calls: list[str] = []
    app = _app(_flaky(calls), ["k-1"], retry=RetryPolicy(base_delay=30.0, jitter=0.0))
    summary = run(app, store_url, once=True, linger=5.0)
    assert calls == ["k-1"] and summary.steps == 1 and summary.transitions == 1
    assert _states(store_url) == {"observing": 1}


def test_once_lingers_for_a_retry_due_within_the_linger(store_url: str) -> None:
    calls: list[str] = []
    app = _app(_flaky(calls), ["k-1"], retry=RetryPolicy(base_delay=0.05, jitter=0.0))
    summary = run(app, store_url, once=True, linger=300.0)
    assert calls == ["k-1", "k-1"] and _states(store_url) == {"ready_for_review": 1}
    assert summary.discovered == 1


def test_once_discovers_once_however_short_the_schedule(store_url: str) -> None:
    """Every discovery here finds a new key: ``--once`` runs it one time, never again from the
    work loop, however often the schedule says it is due."""
    found: list[str] = []

    def discover(ctx: HookContext) -> list[str]:
        if len(found) == 5:  # (discovered again and again, the run would end after five)
            return []
        found.append(f"k-{len(found)}")
        return found[-1:]

    app = App([Automation("ops", discover, lambda ctx: Evidence({}), _report, every=0.001)])
    summary = run(app, store_url, once=True, linger=0.0)
    assert found == ["k-0"] and summary.discovered == 1


@pytest.mark.parametrize("batch", [1, 4])
def test_the_summary_counts_every_claim_and_transition_and_each_new_item(
    store_url: str, batch: int
) -> None:
    """Three items, one claim each carrying two transitions (observe, then propose): three
    claims and six transitions, whether the worker claims one at a time or four at once."""
    app = _app(lambda ctx: Evidence({}), ["a", "b", "c"])
    summary = run(app, store_url, once=True, linger=0.0, batch=batch)
    assert (summary.steps, summary.transitions, summary.discovered) == (3, 6, 3)
    assert _states(store_url) == {"ready_for_review": 3}


def test_the_worker_runs_as_many_hooks_at_once_as_asked(store_url: str) -> None:
    """Two observe hooks meet at a barrier: with ``concurrency=2`` both get there. (Run one at
    a time, the first would wait out the barrier and stop its item.)"""
    meet = threading.Barrier(2, timeout=120)

    def observe(ctx: HookContext) -> Evidence:
        meet.wait()
        return Evidence({})

    app = _app(observe, ["a", "b"], hook_timeout=300.0)
    run(app, store_url, once=True, linger=0.0, concurrency=2)
    assert _states(store_url) == {"ready_for_review": 2}


def test_a_run_puts_back_the_signal_handlers_it_found(store_url: str) -> None:
    def mine(signum: int, frame: Any) -> None:
        pass

    previous = signal.signal(signal.SIGTERM, mine), signal.signal(signal.SIGINT, mine)
    try:
        run(_app(lambda ctx: Evidence({}), []), store_url, once=True, linger=0.0)
        assert signal.getsignal(signal.SIGTERM) is mine and signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])


def test_several_worker_processes_need_an_app_they_can_import(store_url: str) -> None:
    """Worker processes load the app themselves: an ``App`` object is refused before anything
    starts."""
    with pytest.raises(ValueError, match="importable APP spec"):
        run(_app(lambda ctx: Evidence({}), ["a"]), store_url, once=True, workers=2)
    assert _states(store_url) == {}


def test_a_stop_during_a_step_ends_the_run_after_that_step(store_url: str) -> None:
    """The hook itself asks the run to stop (SIGTERM to this process, as a service manager
    would), then goes on for a while: the run returns only after that step has ended and
    been committed, never with it still in flight."""
    ended = threading.Event()

    def observe(ctx: HookContext) -> Evidence:
        os.kill(os.getpid(), signal.SIGTERM)  # handled by the run: a stop request
        threading.Event().wait(3)  # long past the run noticing the request
        ended.set()
        return Evidence({})

    summary = run(_app(observe, ["a"]), store_url, linger=0.0, concurrency=2)
    assert ended.is_set() and summary.transitions == 2
    assert _states(store_url) == {"ready_for_review": 1}
