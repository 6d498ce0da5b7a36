"""Plain hooks called in place on a step thread, timed by the watchdog (runtime/watchdog.py):
a hook in time answers on its step's own thread; a hook past its time has its step taken over
by a new thread that records ``hook_timeout`` and goes on, while the hook's own thread, once
the hook returns, writes nothing. In process, on both stores.

No assertion depends on how fast the machine is: a hook past its time is one that waits until
its step was taken over (an event), and a hook in time has two minutes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from helpers import T0, decide_at
from stopline import (
    App,
    ApprovalPolicy,
    ApprovalRule,
    Artifact,
    Automation,
    Deliver,
    Evidence,
    Proposal,
    QAResult,
    ReportForReview,
)
from stopline.core.commands import Discover
from stopline.core.policy import RetryPolicy
from stopline.core.states import State
from stopline.runtime import lease, watchdog
from stopline.runtime.automation import HookContext
from stopline.runtime.hooks import HookRunner
from stopline.runtime.watchdog import Abandoned, Watchdog
from stopline.runtime.worker import Worker
from stopline.store import Store
from stopline.targets.directory import DirectoryTarget


def test_a_hook_in_time_runs_on_the_calling_thread_and_its_answer_or_exception_stands() -> None:
    runner = HookRunner(Watchdog())
    late: list[str] = []
    here = threading.get_ident()
    result, error = runner.run(threading.get_ident, (), 120, lambda: late.append("late"))
    assert (result, error) == (here, None)
    result, error = runner.run(lambda: 1 // 0, (), 120, lambda: late.append("late"))
    assert result is None and isinstance(error, ZeroDivisionError)
    result, error = runner.run(_exit, (), 120, lambda: late.append("late"))
    assert isinstance(error, SystemExit), "a hook's SystemExit is its failure"
    assert late == [] and runner.watchdog is not None and runner.watchdog.abandoned == 0


def _exit() -> None:
    raise SystemExit(3)


def test_a_hook_past_its_time_is_handed_over_once_and_its_late_answer_dropped() -> None:
    """The hook answers only after the watchdog handed its step over: the hand-over runs once,
    and the call raises ``Abandoned`` instead of returning the answer."""
    watchdog = Watchdog()
    runner = HookRunner(watchdog)
    handed = threading.Event()
    calls: list[int] = []

    def on_timeout() -> None:
        calls.append(threading.get_ident())
        handed.set()

    def stuck() -> str:
        assert handed.wait(120), "never handed over"
        return "late answer"

    here = threading.get_ident()
    with pytest.raises(Abandoned):
        runner.run(stuck, (), 0.05, on_timeout)
    assert len(calls) == 1 and calls[0] != here, "handed over on the watchdog's thread, once"
    assert watchdog.abandoned == 1
    # the watchdog goes on watching: the next call in time answers
    assert runner.run(lambda: "next", (), 120, on_timeout) == ("next", None)
    assert len(calls) == 1


def _app(observe: Callable[..., Any], hook_timeout: float) -> list[Automation]:
    def propose(ctx: HookContext) -> ReportForReview:
        return ReportForReview({"ok": True})

    def fast(ctx: HookContext) -> Evidence:
        return Evidence({"thread": threading.current_thread().name})

    return [
        Automation(
            "slow",
            lambda ctx: [],
            observe,
            propose,
            hook_timeout=hook_timeout,
            retry=RetryPolicy(max_attempts=1),
        ),
        Automation("auto", lambda ctx: [], fast, propose, hook_timeout=120),
    ]


def _now() -> datetime:
    return datetime.now(UTC)


def test_steps_past_their_time_are_taken_over_and_the_worker_keeps_every_slot(
    store: Store,
) -> None:
    """Two slots, both held by hooks that never answer in time: each step is taken over and
    fails ``hook_timeout``, the six other items still run on
    step threads, ``close()`` returns while the hooks still hold their threads, and what the
    hooks answer at last is never written. Each of the two has one attempt: ``exhausted``."""
    release = threading.Event()
    answered: list[str] = []
    held: list[threading.Thread] = []

    def stuck(ctx: HookContext) -> Evidence:
        held.append(threading.current_thread())
        release.wait(120)
        answered.append(ctx.item.key if ctx.item else "")
        return Evidence({"late": True})

    app = App(_app(stuck, hook_timeout=0.05))
    slow, fast = ["s0", "s1"], [f"f{k}" for k in range(6)]
    _discover(store, slow, app.automations[0])
    _discover(store, fast, app.automations[1])
    worker = Worker(store, app, concurrency=2, clock=_now)
    assert worker.slots is not None
    end = time.monotonic() + 120
    while _count(store, State.READY_FOR_REVIEW) < 6 or _count(store, State.EXHAUSTED) < 2:
        assert time.monotonic() < end, "the worker stopped running steps"
        if not worker.tick():
            time.sleep(0.01)
    worker.close()
    assert worker.slots.watchdog.abandoned == 2
    assert answered == [], "the hooks still hold their threads"
    release.set()
    for thread in held:  # each ends once its hook answers, having written nothing
        thread.join(120)
        assert not thread.is_alive()
    assert sorted(answered) == slow and worker.refusals == 0
    for item_id in slow:
        item = store.get(item_id)
        assert item is not None and item.state is State.EXHAUSTED
        assert item.doc("account")["last_error"]["class"] == "hook_timeout"
        assert "evidence" not in item.data, "an abandoned hook's answer was written"
        commands = [e.command for e in store.history(item_id)]
        assert commands == ["discover", "exhaust"]
    for item_id in fast:
        item = store.get(item_id)
        assert item is not None and item.state is State.READY_FOR_REVIEW
        assert item.doc("evidence")["data"]["thread"] == "stopline-step", "not run in place"


def _discover(store: Store, ids: list[str], automation: Automation) -> None:
    for item_id in ids:
        discover = Discover(item_id, automation.name, item_id, {})
        store.insert(decide_at(None, discover, T0, automation.policy))


def _count(store: Store, state: State) -> int:
    return len(store.list_items(state=state.value, limit=100))


# --- a step taken over records what the step would have recorded ------------------------------

HOOKS = ("observe", "propose", "execute", "qa")


def _delivering_app(name: str, stuck: str, wait: Callable[[], None], root: Any) -> Automation:
    """Observe, propose (no approval needed), execute one artifact to a directory, pass QA;
    the hook named ``stuck`` waits (``wait``) before it answers as the others do."""

    def held(hook: str, answer: Any) -> Callable[..., Any]:
        def run(ctx: HookContext, *args: Any) -> Any:
            if hook == stuck:
                wait()
            return answer

        return run

    artifact = Artifact("note", "A note", "one line", "the body")
    return Automation(
        name,
        lambda ctx: [],
        held("observe", Evidence({"ok": True})),
        held("propose", Proposal("deliver the note", {})),
        execute=held("execute", Deliver(artifacts=(artifact,))),
        qa=held("qa", QAResult(True)),
        target=DirectoryTarget(root),
        approval=ApprovalPolicy(default=ApprovalRule(approvals=0)),
        retry=RetryPolicy(max_attempts=1),
        hook_timeout=1.0,  # a hook that answers at once never comes near it
    )


@pytest.mark.parametrize("hook", HOOKS)
def test_a_step_taken_over_records_what_a_step_that_waited_records(
    store: Store, tmp_path: Any, hook: str
) -> None:
    """The same automation, its ``hook`` past its time, run one step at a time (the hook on a
    thread of its own, abandoned by the step that waited for it) and by a worker running
    several items at once (the hook in place, its step taken over): the same events, the same
    account, ``exhausted`` after the one attempt; the late answers change nothing."""
    release = threading.Event()
    held: list[threading.Thread] = []

    def wait() -> None:
        held.append(threading.current_thread())
        release.wait(120)

    single = _delivering_app("single", hook, wait, tmp_path / "single")
    several = _delivering_app("several", hook, wait, tmp_path / "several")
    _discover(store, ["one"], single)
    _discover(store, ["two"], several)
    workers = [
        Worker(store, App([single]), clock=_now),
        Worker(store, App([several]), concurrency=2, clock=_now),
    ]
    end = time.monotonic() + 120
    for worker, item_id in zip(workers, ("one", "two"), strict=True):
        while (found := store.get(item_id)) is not None and found.state is not State.EXHAUSTED:
            assert time.monotonic() < end, f"{item_id} is still {found.state}"
            if not worker.tick():
                time.sleep(0.01)
        worker.close()
    written = {item_id: _story(store, item_id) for item_id in ("one", "two")}
    release.set()
    for thread in held:
        thread.join(120)
        assert not thread.is_alive()
    assert {item_id: _story(store, item_id) for item_id in ("one", "two")} == written
    assert written["one"] == written["two"]
    commands, account = written["one"]
    assert commands[-1] == "exhaust"
    assert account["last_error"] == {
        "class": "hook_timeout",
        "message": f"the {hook} hook ran past its hook_timeout of 1 s and was abandoned",
    }
    assert all(w.refusals == 0 for w in workers)


def _story(store: Store, item_id: str) -> tuple[list[str], dict[str, Any]]:
    """What an item's record says, without who, when or which item: its events' commands and
    its account (whether it names evidence, not the evidence's digest, which holds its time)."""
    item = store.get(item_id)
    assert item is not None
    account = dict(item.doc("account"))
    account["attempts"] = [(a["class"], a["outcome"]) for a in account["attempts"]]
    account["last_error"] = {k: account["last_error"][k] for k in ("class", "message")}
    account["last_evidence_digest"] = account["last_evidence_digest"] is not None
    for key in ("exhausted_at", "resume"):
        assert account.pop(key)
    return [e.command for e in store.history(item_id)], account


def test_an_idle_worker_keeps_no_renewer_or_watchdog_thread_and_a_new_claim_starts_them(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The renewer's and the watchdog's threads end once they have had nothing to do for a
    while (``IDLE_AFTER``, shortened here), so a process that makes many workers keeps no
    idle threads; the next item starts new ones. (The hook sees them: the lease is held and
    the call watched while it runs.)"""
    monkeypatch.setattr(lease, "IDLE_AFTER", 0.05)
    monkeypatch.setattr(watchdog, "IDLE_AFTER", 0.05)
    before = set(threading.enumerate())
    seen: list[set[threading.Thread]] = []
    names = {"stopline-leases", "stopline-hook-watch"}

    def observe(ctx: HookContext) -> Evidence:
        seen.append({t for t in set(threading.enumerate()) - before if t.name in names})
        return Evidence({})

    app = App(_app(observe, hook_timeout=120))
    worker = Worker(store, app, concurrency=2, clock=_now)
    for round_ in range(2):
        item_id = f"r{round_}"
        _discover(store, [item_id], app.automations[0])
        end = time.monotonic() + 120
        while (found := store.get(item_id)) is None or found.state is not State.READY_FOR_REVIEW:
            assert time.monotonic() < end, "the item was not run"
            if not worker.tick():
                time.sleep(0.01)
        assert {t.name for t in seen[-1]} == names
        for thread in seen[-1]:
            thread.join(120)
            assert not thread.is_alive(), f"{thread.name} stayed idle"
    assert not seen[0] & seen[1], "the second item ran with the threads of the first"
    worker.close()
