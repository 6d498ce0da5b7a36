"""Leases with real processes and real signals: SIGKILL and SIGSTOP in the middle of a step."""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from proc import wait_for

from .labkit import Lab, parse_time

# one step at a time, in groups, and claimed ahead, and as greenlets of one thread
LAB_MODES = ("single", "batch", "ahead", "lockstep")

BLOCK_OBSERVE = {"STOPLINE_TEST_BLOCK_STEP": "observe"}
# The worker that takes over holds its own leases long: no stall of a loaded machine can let
# one run out under it (only the first worker's short lease is under test).
LONG_LEASE = {"STOPLINE_TEST_LEASE": "60"}


def _blocked_worker(lab: Lab, ref: str, name: str = "a") -> tuple[Any, dict[str, Any]]:
    """Start a worker whose ``observe`` blocks; return it and the item once it holds the lease."""
    proc = lab.run_app("--once", env=BLOCK_OBSERVE, name=name)
    wait_for(
        lambda: lab.runs("pid = ? AND step = 'observe'", (proc.pid,)),
        30,
        f"worker {name} (pid {proc.pid}) to enter observe",
    )
    item = lab.item(ref)
    assert item["lease_owner"] and f":{proc.pid}:" in item["lease_owner"], item["lease_owner"]
    return proc, item


def _failures(entries: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """``(attempt, outcome)`` of the attempt-log entries that are not plain successes."""
    return [(e["attempt"], e["outcome"]) for e in entries if e["outcome"] != "done"]


def _worker_events(lab: Lab, item_id: str) -> list[dict[str, Any]]:
    return [e for e in lab.events(item_id) if e["actor"] != "scheduler"]


@pytest.mark.parametrize(
    ("key", "max_attempts", "end_state"),
    [
        ("done-1", 3, "completed"),  # the next worker redoes the step and carries on
        ("broken-1", 2, "exhausted"),  # the killed attempt spent budget: one more, then stop
        ("done-1", 1, "exhausted"),  # the killed attempt was the last: the sweeper stops it
    ],
)
def test_sigkill_mid_step_counts_the_attempt_and_the_next_worker_takes_over(
    make_lab: Any, key: str, max_attempts: int, end_state: str
) -> None:
    """A worker SIGKILLed mid-step: its lease expires, the attempt is counted, the effect is once."""
    lab = make_lab(keys=key, lease=2, max_attempts=max_attempts)
    ref = f"lab/{key}"
    a, held = _blocked_worker(lab, ref)
    assert held["attempts"] == 1
    a_id, a_expiry = held["lease_owner"], parse_time(held["lease_expires_at"])

    os.kill(a.pid, signal.SIGKILL)
    assert a.wait(10) == -signal.SIGKILL
    if max_attempts == 1:
        # a --once worker exits at once when no step is claimable; see test_once_worker_waits_...
        wait_for(
            lambda: datetime.now(UTC) > parse_time(lab.item(ref)["lease_expires_at"]),
            10,
            "the dead worker's lease to expire",
        )
    b = lab.run_app("--once", env=LONG_LEASE, name="b")
    assert b.wait(60) == 0, b.output()

    item = lab.item(ref)
    assert item["state"] == end_state, item["data"].get("exception")
    assert item["lease_owner"] is None
    observing = [e for e in item["attempt_log"] if e["state"] == "observing"]
    abandoned = observing[0]
    assert abandoned["worker"] == a_id
    assert abandoned["attempt"] == 1
    assert abandoned["class"] == "lease_expired"
    assert abandoned["outcome"] == "abandoned"
    assert parse_time(abandoned["at"]) >= a_expiry, "the lease was taken before it expired"
    events = _worker_events(lab, item["id"])
    assert all(e["actor"] != a_id for e in events), "the killed worker wrote an event"
    assert events and all(f":{b.pid}:" in e["actor"] for e in events)

    observe_runs = lab.runs("key = ? AND step = 'observe'", (key,))
    effects = lab.effects()
    if end_state == "completed":
        assert [(r["pid"], r["attempt"]) for r in observe_runs] == [(a.pid, 1), (b.pid, 2)]
        assert _failures(observing) == [(1, "abandoned")]
        assert {e["step"] for e in effects} == {"observe", "propose", "execute"}
        assert all(e["writes"] == 1 and e["pid"] == b.pid for e in effects), effects
    elif max_attempts == 2:
        assert [(r["pid"], r["attempt"]) for r in observe_runs] == [(a.pid, 1), (b.pid, 2)]
        assert item["attempts"] == item["max_attempts"] == 2
        account = item["data"]["account"]
        assert [(e["attempt"], e["outcome"]) for e in account["attempts"]] == [
            (1, "abandoned"),
            (2, "exhausted"),
        ]
        assert account["last_error"]["class"] == "TransientError"
        assert effects == []
    else:
        assert [r["pid"] for r in observe_runs] == [a.pid], "a spent budget was claimed again"
        assert item["attempts"] == item["max_attempts"] == 1
        assert [e["command"] for e in events] == ["exhaust"]
        account = item["data"]["account"]
        assert [(e["attempt"], e["outcome"]) for e in account["attempts"]] == [(1, "abandoned")]
        assert effects == []
    lab.verify()


def test_once_worker_waits_for_a_dead_workers_lease_on_the_last_attempt(make_lab: Any) -> None:
    """A --once worker started while a dead worker's last-attempt lease is live sweeps it."""
    lab = make_lab(keys="done-1", lease=5, max_attempts=1)  # long: b starts well before it ends
    a, _ = _blocked_worker(lab, "lab/done-1")
    os.kill(a.pid, signal.SIGKILL)
    a.wait(10)
    b = lab.run_app("--once", "--linger", "5", name="b")
    assert b.wait(60) == 0, b.output()
    assert lab.item("lab/done-1")["state"] == "exhausted"


def test_sigstop_past_the_lease_then_sigcont_the_late_commit_is_refused(make_lab: Any) -> None:
    """A worker paused past its lease: its late commit is refused lease_lost and writes nothing."""
    lab = make_lab(keys="review-1", lease=2)
    a, held = _blocked_worker(lab, "lab/review-1")
    a_id = held["lease_owner"]
    lab.pause(a)
    try:
        b = lab.run_app("--once", env=LONG_LEASE, name="b")
        assert b.wait(60) == 0, b.output()
        item = lab.item("lab/review-1")
        assert item["state"] == "ready_for_review"
        before = lab.dump()
        assert lab.refusals() == []
        lab.gate.touch()  # the paused hook returns as soon as it runs again
    finally:
        os.kill(a.pid, signal.SIGCONT)
    assert a.wait(30) == 0, a.output()
    assert "lease lost" in a.err.read_text()

    assert lab.dump() == before, "the paused worker wrote something besides its refusal"
    refusals = lab.refusals()
    assert [(r["item_id"], r["command"], r["actor"], r["reasons"]) for r in refusals] == [
        (item["id"], "observe", a_id, ["lease_lost"])
    ]
    events = lab.events(item["id"])
    assert [e["command"] for e in events] == ["discover", "observe", "report"]
    assert all(f":{b.pid}:" in e["actor"] for e in events[1:])
    assert len(events) == item["seq"]
    log = [(e["state"], e["worker"], e["outcome"]) for e in item["attempt_log"]]
    assert [entry for entry in log if entry[2] != "done"] == [("observing", a_id, "abandoned")]
    observe_runs = lab.runs("step = 'observe'")
    assert [(r["pid"], r["attempt"]) for r in observe_runs] == [(a.pid, 1), (b.pid, 2)]
    observe_effect = next(e for e in lab.effects() if e["step"] == "observe")
    assert observe_effect["pid"] == b.pid  # recorded by the worker whose commit counted
    lab.verify()


def test_a_live_lease_is_never_taken(make_lab: Any) -> None:
    """While a worker holds and renews its lease, another worker process never runs the step."""
    # a renews every lease/3 seconds: its lease runs out only if it stalls for 2/3 of a lease
    # (4 s here, far beyond any stall of a loaded machine seen); the window below spans two
    # lease periods, so renewals are what keep b out
    lab = make_lab(keys="done-1", lease=6)
    a, held = _blocked_worker(lab, "lab/done-1")
    b = lab.run_app(name="b")  # long-running: it keeps polling for claimable work
    time.sleep(12)  # two lease periods: only the holder's renewals keep b out
    assert b.popen.poll() is None, b.output()
    assert lab.runs("pid = ?", (b.pid,)) == []
    item = lab.item("lab/done-1")
    assert item["lease_owner"] == held["lease_owner"]
    assert item["lease_token"] == held["lease_token"]
    assert item["attempts"] == 1
    lab.gate.touch()
    assert a.wait(30) == 0, a.output()
    os.kill(b.pid, signal.SIGTERM)
    assert b.wait(30) == 0, b.output()
    item = lab.item("lab/done-1")
    assert item["state"] == "completed"
    effects = lab.effects()
    assert all(e["writes"] == 1 for e in effects), effects
    assert next(e for e in effects if e["step"] == "observe")["pid"] == a.pid
    assert lab.refusals() == []
    lab.verify()
