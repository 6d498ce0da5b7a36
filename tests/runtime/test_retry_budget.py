"""Retry budgets that follow the item: across processes, restarts, kills, and resume."""

from __future__ import annotations

import itertools
import json
import os
import signal
from datetime import timedelta
from typing import Any

import pytest

from proc import wait_for
from stopline.core.policy import RetryPolicy

from .labkit import Lab, parse_time

REF = "lab/broken-1"


def _policy(max_attempts: int, delay: float, jitter: float) -> RetryPolicy:
    """The lab app's retry policy for these settings (see ``apps/lab.py``)."""
    return RetryPolicy(
        max_attempts=max_attempts,
        base_delay=delay,
        backoff=2.0,
        max_delay=max(delay, 5.0),
        jitter=jitter,
    )


def _check_account(lab: Lab, policy: RetryPolicy, outcomes: list[str]) -> dict[str, Any]:
    """The exhausted item's account (read through ``stopline show``) lists every attempt with
    its times and outcome, and every retry waited at least the policy's delay."""
    shown = lab.show(REF)
    assert shown["state"] == "exhausted"
    assert shown["attempts"] == shown["max_attempts"] == policy.max_attempts
    account = shown["account"]
    entries = account["attempts"]
    assert [(e["attempt"], e["outcome"]) for e in entries] == [
        (n, outcome) for n, outcome in enumerate(outcomes, start=1)
    ]
    assert account["attempt_count"] == account["max_attempts"] == policy.max_attempts
    assert account["last_error"] == {
        "class": "TransientError",
        "message": "broken-1: upstream timed out",
    }
    assert "resume" in account["resume"]["command"]
    retries = [e for e in lab.events(shown["id"]) if e["command"] == "retry"]
    assert len(retries) == outcomes.count("retry")
    delays = iter(json.loads(e["detail"])["delay_seconds"] for e in retries)
    for entry, after in itertools.pairwise(entries):
        if entry["outcome"] != "retry":
            continue
        floor = policy.delay(entry["attempt"], 0.0)
        recorded = timedelta(seconds=next(delays))
        assert floor <= recorded <= policy.delay(entry["attempt"], 1.0)
        gap = parse_time(after["claimed_at"]) - parse_time(entry["at"])
        assert gap >= recorded, f"attempt {after['attempt']} came {gap} after a {recorded} delay"
    return shown


def test_retryable_failure_exhausts_after_max_attempts_across_restarts(make_lab: Any) -> None:
    """An always-retryable failure: exhausted after exactly max_attempts over many processes."""
    # A process makes a second attempt only if it stalls for a whole retry delay between its
    # failure and its next claim: a delay of a second or more keeps one attempt per process.
    lab = make_lab(keys="broken-1", max_attempts=3, delay=1.0, jitter=0.5)
    policy = _policy(3, 1.0, 0.5)
    lab.run_once("--linger", "0")  # at most one attempt per process
    launches = 1
    while lab.item(REF)["state"] != "exhausted":
        launches += 1
        assert launches <= 30, f"not exhausted after {launches} runs: {lab.item(REF)}"
        lab.run_once("--linger", "0")
    runs = lab.runs()
    assert [r["attempt"] for r in runs] == [1, 2, 3]
    assert len({r["pid"] for r in runs}) == 3, "each attempt was made by a new process"
    _check_account(lab, policy, ["retry", "retry", "exhausted"])

    before = lab.dump(without=("refusals", "schedules"))
    for _ in range(2):
        lab.run_once("--linger", "0")
    assert lab.dump(without=("refusals", "schedules")) == before
    assert len(lab.runs()) == 3
    lab.verify()


@pytest.mark.slow
def test_budget_survives_sigterm_sigkill_and_restarts_of_long_running_workers(
    make_lab: Any,
) -> None:
    """Long-running workers stopped (SIGTERM), killed mid-attempt (SIGKILL) and restarted spend
    exactly max_attempts, the killed attempt included."""
    lab = make_lab(keys="broken-1", max_attempts=4, delay=0.5, lease=2)
    policy = _policy(4, 0.5, 0.0)

    def attempts_run(n: int) -> Any:
        return wait_for(lambda: len(lab.runs()) >= n, 60, f"attempt {n} to start")

    # p1 is stopped while its first attempt is still running (held in observe by its own
    # gate), so it cannot have claimed a second one by the time it notices the signal.
    gate1 = lab.root / "gate-p1"
    hold = {
        "STOPLINE_TEST_BLOCK_STEP": "observe",
        "STOPLINE_TEST_BLOCK_ATTEMPT": "1",
        "STOPLINE_TEST_GATE": str(gate1),
    }
    p1 = lab.run_app(env=hold, name="p1")
    attempts_run(1)
    os.kill(p1.pid, signal.SIGTERM)
    gate1.touch()
    assert p1.wait(30) == 0, p1.output()
    assert lab.item(REF)["attempt_log"], "attempt 1 was not recorded"

    block = {"STOPLINE_TEST_BLOCK_STEP": "observe", "STOPLINE_TEST_BLOCK_ATTEMPT": "2"}
    p2 = lab.run_app(env=block, name="p2")
    attempts_run(2)
    os.kill(p2.pid, signal.SIGKILL)
    assert p2.wait(30) == -signal.SIGKILL

    p3 = lab.run_app(env={"STOPLINE_TEST_LEASE": "60"}, name="p3")  # no stall costs it a lease
    wait_for(lambda: lab.item(REF)["state"] == "exhausted", 60, "the item to be exhausted")
    os.kill(p3.pid, signal.SIGTERM)
    assert p3.wait(30) == 0, p3.output()

    runs = lab.runs()
    assert [(r["attempt"], r["pid"]) for r in runs] == [
        (1, p1.pid),
        (2, p2.pid),
        (3, p3.pid),
        (4, p3.pid),
    ]
    shown = _check_account(lab, policy, ["retry", "abandoned", "retry", "exhausted"])
    abandoned = shown["account"]["attempts"][1]
    assert abandoned["class"] == "lease_expired"
    assert f":{p2.pid}:" in abandoned["worker"]
    lab.verify()


def test_terminal_failure_is_never_retried(make_lab: Any) -> None:
    """A terminal failure ends in failed after exactly one attempt, whatever the budget."""
    lab = make_lab(keys="fatal-1", max_attempts=5, delay=0.05)
    lab.run_once()
    item = lab.item("lab/fatal-1")
    assert item["state"] == "failed"
    assert item["attempts"] == 1
    assert [(e["attempt"], e["class"], e["outcome"]) for e in item["attempt_log"]] == [
        (1, "TerminalError", "failed")
    ]
    assert item["data"]["failure"]["message"] == "fatal-1: no authority to read this"
    assert [e["command"] for e in lab.events(item["id"])] == ["discover", "fail"]
    before = lab.dump(without=("refusals", "schedules"))
    lab.run_once()
    lab.run_once("--workers", "2")
    assert lab.dump(without=("refusals", "schedules")) == before
    assert len(lab.runs()) == 1
    lab.verify()


RESUME = ("resume", REF, "--reason", "upstream fixed", "--json")


@pytest.mark.parametrize(
    ("actor", "attempts", "reasons"),
    [
        ("mallory", "2", ["actor_unknown"]),
        ("dana", "2", ["actor_not_authorized"]),
        ("carol", "5", ["resume_cap"]),
        ("carol", "0", ["invalid_input"]),
        ("dana", "9", ["actor_not_authorized", "resume_cap"]),
    ],
)
def test_a_refused_resume_writes_nothing(
    make_lab: Any, actor: str, attempts: str, reasons: list[str]
) -> None:
    """A refused resume (unknown actor, no operator role, above the cap) writes only its audit."""
    lab = make_lab(keys="broken-1", max_attempts=2, delay=0.05, resume_cap=4)
    lab.run_once()
    assert lab.item(REF)["state"] == "exhausted"
    before = lab.dump()
    done = lab.cli(*RESUME, "--actor", actor, "--attempts", attempts, ok=(3,))
    decision = json.loads(done.stdout)
    assert decision["decision"] == "refused"
    assert sorted(decision["reasons"]) == sorted(reasons)
    assert decision["sequence"] is None
    assert lab.dump() == before
    [refusal] = lab.refusals()
    assert (refusal["command"], refusal["actor"], sorted(refusal["reasons"])) == (
        "resume",
        actor,
        sorted(reasons),
    )


def test_resume_grants_a_recorded_budget_that_the_workers_then_follow(make_lab: Any) -> None:
    """resume returns an exhausted item to work with a recorded, capped budget; only it resets."""
    lab = make_lab(keys="broken-1", max_attempts=2, delay=0.05, resume_cap=4)
    lab.run_once()
    exhausted = lab.item(REF)
    assert (exhausted["state"], exhausted["attempts"]) == ("exhausted", 2)

    decision = lab.cli_json(*RESUME, "--actor", "carol", "--attempts", "3")
    assert (decision["decision"], decision["state"]) == ("applied", "observing")
    item = lab.item(REF)
    assert (item["state"], item["attempts"], item["max_attempts"]) == ("observing", 0, 3)
    [grant] = item["data"]["grants"]
    assert {k: grant[k] for k in ("actor", "reason", "attempts", "state")} == {
        "actor": "carol",
        "reason": "upstream fixed",
        "attempts": 3,
        "state": "observing",
    }
    assert item["data"]["previous_account"] == exhausted["data"]["account"]
    event = lab.events(item["id"])[-1]
    assert (event["command"], event["actor"], event["seq"]) == ("resume", "carol", item["seq"])
    assert json.loads(event["detail"])["attempts"] == 3

    lab.run_once()  # the new budget, no more: three new attempts, then exhausted again
    again = lab.item(REF)
    assert (again["state"], again["attempts"], again["max_attempts"]) == ("exhausted", 3, 3)
    assert [r["attempt"] for r in lab.runs()] == [1, 2, 1, 2, 3]
    account = again["data"]["account"]
    assert [e["attempt"] for e in account["attempts"]] == [1, 2, 3]

    lab.cli_json(*RESUME, "--actor", "alice")  # no --attempts: the policy's own budget
    grants = lab.item(REF)["data"]["grants"]
    assert [(g["actor"], g["attempts"]) for g in grants] == [("carol", 3), ("alice", 2)]
    assert lab.refusals() == []
    lab.verify()
