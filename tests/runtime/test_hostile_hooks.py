"""Hooks that misbehave, in real worker processes: the worker records what happened with its
real class and goes on to the next item; nothing terminal is retried; a hook past its time is
abandoned and its late answer never committed; each automation's claims get its own lease."""

from __future__ import annotations

import os
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from proc import wait_for
from stopline.core.policy import ApprovalPolicy, ApprovalRule
from stopline.core.states import State
from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import Deliver, Evidence, Proposal
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.worker import Worker
from stopline.store import open_store

from .labkit import Lab, parse_time

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
# in groups a plain hook runs in place (watchdog.py), and as greenlets of one thread
LAB_MODES = ("single", "batch", "ahead", "lockstep")


def _observe_runs(lab: Lab, key: str) -> list[dict[str, Any]]:
    return lab.runs("key = ? AND step = 'observe'", (key,))


def _went_on(lab: Lab, hostile: str, pid: int) -> None:
    """After the hostile hook, the same process ran ``flaky-1`` to completion: its first
    attempt failed (a retry 1 s later), so its second ran after the hostile outcome."""
    item = lab.item("lab/flaky-1")
    assert item["state"] == "completed", item["data"]
    runs = lab.runs()
    assert {r["pid"] for r in runs} == {pid}
    hostile_at = min(r["at"] for r in _observe_runs(lab, hostile))
    later = [r for r in runs if r["key"] == "flaky-1" and r["at"] > hostile_at]
    assert {r["step"] for r in later} >= {"observe", "propose", "execute"}


@pytest.mark.parametrize(
    ("kind", "state", "failure_class", "detail"),
    [
        ("deep", "failed", "invalid_output", "depth"),  # 600-deep evidence
        ("nan", "failed", "invalid_output", "not_finite"),
        ("recursive", "exception", "RecursionError", "maximum recursion depth"),
        ("memory", "exception", "MemoryError", "MemoryError"),
    ],
)
def test_a_hook_that_breaks_is_recorded_with_its_real_class_and_the_worker_goes_on(
    make_lab: Any, kind: str, state: str, failure_class: str, detail: str
) -> None:
    """A hook returning 600-deep data or NaN, or raising RecursionError or MemoryError: one
    attempt, recorded with its real class; the process lives, completes the next item, and
    ends with exit 4, the status of a run whose app's code failed."""
    key = f"{kind}-1"
    lab = make_lab(keys=f"{key},flaky-1", delay=1, max_attempts=3)
    proc = lab.run_app("--once", "--linger", "5")
    assert proc.wait(90) == 4, proc.output()
    assert f"{key}" in proc.err.read_text() + proc.out.read_text()

    item = lab.item(f"lab/{key}")
    assert item["state"] == state
    assert len(_observe_runs(lab, key)) == 1, "a failure that is not retryable was retried"
    entries = [e for e in item["attempt_log"] if e["state"] == "observing"]
    assert [(e["attempt"], e["class"]) for e in entries] == [(1, failure_class)]
    assert detail in entries[0]["message"]
    if state == "failed":
        assert item["data"]["failure"]["class"] == failure_class
    else:
        assert item["data"]["exception"]["why"].startswith(f"{failure_class}: ")
    assert all(e["class"] != "lease_expired" for e in item["attempt_log"])
    _went_on(lab, key, proc.pid)
    lab.verify()


def test_a_hook_past_its_timeout_is_abandoned_its_answer_dropped_and_exhaustion_says_so(
    make_lab: Any,
) -> None:
    """A hook sleeping past hook_timeout: each attempt is recorded hook_timeout and retried;
    the spent budget's account names hook_timeout, not lease_expired; the abandoned hook's
    late evidence is never committed; the worker goes on."""
    # every hook of the app has the 2 s timeout: flaky-1's hooks (two small SQLite writes each)
    # must end within it on a loaded machine, and slow-1's 6 s sleep must always pass it
    lab = make_lab(keys="slow-1,flaky-1", hook_timeout=2, slow=6, max_attempts=2, delay=1)
    proc = lab.run_app(name="worker")  # long-running: alive when the abandoned hooks answer

    wait_for(lambda: lab.runs(), 60, "the worker to run a hook")  # the database is made

    def settled() -> bool:
        states = {ref: item["state"] for ref, item in lab.items().items()}
        late = [e for e in lab.effects() if e["key"] == "slow-1"]
        return states == {"lab/slow-1": "exhausted", "lab/flaky-1": "completed"} and bool(late)

    wait_for(settled, 90, "slow-1 exhausted, flaky-1 completed, a late answer returned")
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(30) == 0, proc.output()

    item = lab.item("lab/slow-1")
    account = item["data"]["account"]
    assert [(e["attempt"], e["class"], e["outcome"]) for e in account["attempts"]] == [
        (1, "hook_timeout", "retry"),
        (2, "hook_timeout", "exhausted"),
    ]
    assert account["last_error"]["class"] == "hook_timeout"
    assert "hook_timeout of 2 s" in account["last_error"]["message"]
    events = [e["command"] for e in lab.events(item["id"])]
    assert events == ["discover", "retry", "exhaust"], "an abandoned hook's answer was committed"
    assert "evidence" not in item["data"]
    assert len(_observe_runs(lab, "slow-1")) == 2
    _went_on(lab, "slow-1", proc.pid)
    lab.verify()


def test_each_automation_claims_with_its_own_lease(make_lab: Any) -> None:
    """Beside an automation with a 50 s lease, one that declares 20 s is claimed for 20 s
    (its first claim too), and the other for 50 s. (Long leases: no renewal can come between
    the claim and the hook that reports it.)"""
    lab = make_lab(keys="done-1", patient_keys="done-1", lease=20, patient_lease=50)
    summary = lab.run_once()
    assert summary["discovered"] == 2
    leases = {
        run["automation"]: parse_time(run["lease_ends"]) - parse_time(run["claimed_at"])
        for run in lab.runs("step = 'observe'")
    }
    assert leases == {"lab": timedelta(seconds=20), "patient": timedelta(seconds=50)}
    assert {i["state"] for i in lab.items().values()} == {"completed"}
    lab.verify()


def test_every_claim_of_an_automation_has_its_lease_to_the_microsecond(tmp_path: Path) -> None:
    """In process, on a fixed clock and without renewal: every claim of each step (the first
    from the store, the next ones folded into a commit) lasts exactly its automation's lease."""
    seen: dict[str, set[timedelta]] = {}

    def record(ctx: HookContext) -> None:
        assert ctx.item is not None and ctx.item.lease_expires_at and ctx.item.claimed_at
        length = ctx.item.lease_expires_at - ctx.item.claimed_at
        seen.setdefault(ctx.automation, set()).add(length)

    def observe(ctx: HookContext) -> Evidence:
        record(ctx)
        return Evidence({"ok": True})

    def propose(ctx: HookContext) -> Proposal:
        record(ctx)
        return Proposal("tidy", {})

    def execute(ctx: HookContext) -> Deliver:
        record(ctx)
        return Deliver()

    rule = ApprovalPolicy(rules={"tidy": ApprovalRule(approvals=0)})
    app = App(
        [
            Automation(
                name=name,
                discover=lambda ctx: ["k1"],
                observe=observe,
                propose=propose,
                execute=execute,
                approval=rule,
                lease_seconds=lease,
            )
            for name, lease in (("short", 2.0), ("long", 5.0))
        ]
    )
    store = open_store(f"sqlite:///{tmp_path / 'leases.db'}")
    try:
        Scheduler(store, app, clock=lambda: T0).tick(force=True)
        worker = Worker(store, app, clock=lambda: T0, renew=False)
        while worker.tick():
            pass
        assert {i.state for i in store.list_items()} == {State.COMPLETED}
    finally:
        store.close()
    assert seen == {"short": {timedelta(seconds=2)}, "long": {timedelta(seconds=5)}}
