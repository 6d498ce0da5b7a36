"""Several worker processes race over many items on one SQLite file."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from proc import wait_for

from .labkit import Lab, lab_module

# one step at a time, in groups, and claimed ahead, and as greenlets of one thread
LAB_MODES = ("single", "batch", "ahead", "lockstep")

END_STATE = {
    "done": "completed",
    "flaky": "completed",
    "review": "ready_for_review",
    "approve": "awaiting_approval",
    "eyes": "exception",
}
STEPS = {
    "done": ["observe", "propose", "execute"],
    "flaky": ["observe", "propose", "execute"],
    "review": ["observe", "propose"],
    "approve": ["observe", "propose"],
    "eyes": ["observe"],
}


def _keys_spec(items: int) -> str:
    """``items`` keys: 40% done, 20% flaky, 15% review, 15% approve, 10% eyes."""
    shares = {"done": 40, "flaky": 20, "review": 15, "approve": 15}
    counts = {k: items * share // 100 for k, share in shares.items()}
    counts["eyes"] = items - sum(counts.values())
    return ",".join(f"{k}*{n}" for k, n in counts.items())


def _race(
    lab: Lab, processes: int, *, workers_each: int = 1, timeout: float = 120, all_busy: bool = False
) -> None:
    # Every worker process parks in its first hook until all have: each one surely takes part,
    # however slowly the machine starts them.
    parked = lab.root / "parked"
    parked.mkdir()
    lab.env["STOPLINE_TEST_PARK_DIR"] = str(parked)
    procs = [
        lab.run_app("--once", "--workers", str(workers_each), name=f"w{n}")
        for n in range(processes)
    ]

    def all_parked() -> bool:
        for proc in procs:
            assert proc.popen.poll() is None, proc.output()
        return len([p for p in parked.iterdir() if p.name.isdigit()]) == processes * workers_each

    wait_for(all_parked, timeout, "every worker process to start work")
    lab.gate.touch()
    for proc in procs:
        code = proc.wait(timeout)
        assert code == 0, proc.output()
    keys = lab_module.expand_keys(lab.env["STOPLINE_TEST_KEYS"])
    items = lab.items()

    # no item lost, none duplicated, none stuck: every key once, in its expected end state
    assert sorted(items) == sorted(f"lab/{k}" for k in keys)
    wrong = {
        ref: row["state"]
        for ref, row in items.items()
        if row["state"] != END_STATE[lab_module.kind(row["key"])]
    }
    assert not wrong, f"items not in their end state: {wrong}"
    assert all(row["lease_owner"] is None for row in items.values())

    # every step's effect exactly once; every hook ran once (twice for the flaky observe)
    by_id = {row["id"]: row for row in items.values()}
    effects = Counter()
    for effect in lab.effects():
        effects[(by_id[effect["item_id"]]["key"], effect["step"])] += effect["writes"]
    expected = {(k, step): 1 for k in keys for step in STEPS[lab_module.kind(k)]}
    assert effects == expected
    runs = Counter((r["key"], r["step"]) for r in lab.runs())
    expected_runs = Counter(expected)
    expected_runs.update((k, "observe") for k in keys if lab_module.kind(k) == "flaky")
    assert runs == expected_runs, "a step ran more often than its claims allow"
    assert lab.refusals() == [], "a worker's commit was refused: two workers held one step"

    # the retried step was counted and delayed, on the item
    for ref, row in items.items():
        if row["key"].startswith("flaky"):
            [entry] = [e for e in row["attempt_log"] if e["outcome"] != "done"]
            assert (entry["state"], entry["attempt"], entry["outcome"]) == (
                "observing",
                1,
                "retry",
            ), ref
    events = lab.query("SELECT COUNT(*) AS n FROM events")[0]["n"]
    assert events == sum(row["seq"] for row in items.values())
    doc = lab.verify()
    assert doc["items"] == len(keys)
    pids = {r["pid"] for r in lab.runs()}
    assert len(pids) >= 2, "only one process did any work: there was no race"
    if all_busy:
        assert len(pids) == processes * workers_each, f"only {len(pids)} processes did work"


def test_three_processes_race_over_sixty_items(make_lab: Any) -> None:
    """3 worker processes x 60 items: every effect once, no item lost or stuck, verify clean."""
    lab = make_lab(keys=_keys_spec(60), hook_sleep=0.005, delay=0.05)
    _race(lab, 3)


@pytest.mark.slow
def test_four_processes_race_over_five_hundred_items(make_lab: Any) -> None:
    """4 worker processes x 500 items: every effect once, no item lost or stuck, verify clean."""
    lab = make_lab(keys=_keys_spec(500), hook_sleep=0.002, delay=0.05)
    _race(lab, 4, timeout=600, all_busy=True)


@pytest.mark.slow
def test_two_runs_of_two_workers_race_over_three_hundred_items(make_lab: Any) -> None:
    """Two `run --workers 2` (four worker processes) x 300 items: every effect once, verify clean."""
    lab = make_lab(keys=_keys_spec(300), hook_sleep=0.002, delay=0.05)
    _race(lab, 2, workers_each=2, timeout=600, all_busy=True)
