"""Stopped items stay stopped: new workers, restarts and re-discovery carry nothing forward."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from proc import item_snapshot, wait_for
from stopline.core.canonical import format_time

from .labkit import DEMO_APP, LAB_APP, Lab

# one step at a time, in groups, and claimed ahead, and as greenlets of one thread
LAB_MODES = ("single", "batch", "ahead", "lockstep")

UNCHANGED = ("refusals", "schedules")  # the schedule's clock moves; nothing else may
STOP_STATES = {"awaiting_approval", "ready_for_review", "exception", "exhausted", "revision_failed"}


def _assert_nothing_moved(lab: Lab, snapshot: dict[str, Any], dump: dict[str, Any]) -> None:
    assert item_snapshot(lab) == snapshot
    assert lab.dump(without=UNCHANGED) == dump
    assert lab.refusals() == [], "a worker tried to move a stopped item"


def _long_running_until(
    lab: Lab, app: str, fired: Any, what: str, settle: float = 0.0, **env: str
) -> Any:
    """Start a long-running ``stopline run``, wait for ``fired()`` (and ``settle`` seconds more,
    the worker's chance to claim whatever it wrongly could), then stop it with SIGTERM."""
    proc = lab.run_app(app=app, env=env, name="long")
    try:
        wait_for(fired, 60, what)
        time.sleep(settle)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(30) == 0, proc.output()
    return proc


def test_rediscovery_new_workers_and_restarts_never_move_a_stopped_item(
    make_lab: Any, tmp_path: Path
) -> None:
    """Re-discovery, new workers and restarts create, reset and re-propose nothing."""
    lab = make_lab(
        keys="approve-1,review-1,eyes-1,broken-1,revise-1,done-1",
        patient_keys="wait-1",
        max_attempts=2,
        drafts=tmp_path / "drafts",
    )
    first = lab.run_once()
    assert first["discovered"] == 7
    lab.cli_json(
        "revise", "lab/revise-1", "--actor", "carol", "--reason", "typo", "--artifact", "note"
    )
    lab.run_once()
    snapshot = item_snapshot(lab)
    assert {ref: s["state"] for ref, s in snapshot.items()} == {
        "lab/approve-1": "awaiting_approval",
        "lab/review-1": "ready_for_review",
        "lab/eyes-1": "exception",
        "lab/broken-1": "exhausted",
        "lab/revise-1": "revision_failed",
        "lab/done-1": "completed",
        "patient/wait-1": "observing",  # waiting for its next eligible time, an hour away
    }
    waiting = snapshot["patient/wait-1"]
    assert waiting["attempts"] == 1
    assert snapshot["lab/broken-1"]["attempts"] == 2
    assert snapshot["lab/approve-1"]["proposal_digest"]
    dump = lab.dump(without=UNCHANGED)
    runs = len(lab.runs())
    fired = len(lab.discoveries())

    for extra in ((), ("--workers", "2")):  # new worker processes, discovery forced each time
        summary = lab.run_once(*extra)
        assert (summary["steps"], summary["discovered"]) == (0, 0)
        _assert_nothing_moved(lab, snapshot, dump)

    # a long-running worker whose schedule fires every half second: three more discoveries
    proc = _long_running_until(
        lab,
        LAB_APP,
        lambda: len(lab.discoveries()) >= fired + 2 + 3,
        "the schedule to fire three more times",
        STOPLINE_TEST_EVERY="0.5",
    )
    assert proc.json()["steps"] == 0
    _assert_nothing_moved(lab, snapshot, dump)

    rediscovered = lab.discoveries()[fired:]
    assert len({d["pid"] for d in rediscovered}) >= 3
    assert all(d["keys"] == rediscovered[0]["keys"] for d in rediscovered)
    keys = Counter((row["automation"], row["key"]) for row in lab.query("SELECT * FROM items"))
    assert set(keys.values()) == {1}, "re-discovery created a second item for a key"
    assert len(lab.runs()) == runs, "a hook ran for a stopped or waiting item"
    assert (
        lab.query("SELECT COUNT(*) AS n FROM items WHERE state = 'ready_for_review'")[0]["n"] == 1
    )
    lab.verify()


def test_demo_items_at_every_stop_line_survive_restarts_and_the_schedule(make_lab: Any) -> None:
    """Seed 003: stop-lines hold across a new worker, a restart and the schedule firing again."""
    lab = make_lab()
    summary = lab.run_once(app=DEMO_APP)
    assert summary["discovered"] == 8
    # a revision whose objects vanished from the drafts folder: revision_failed
    digest_drafts = lab.root / "demo-drafts" / "digest"
    for child in digest_drafts.iterdir():
        shutil.rmtree(child)
    lab.cli_json(
        "revise",
        "weekly-digest/2026-W48",
        "--actor",
        "alice",
        "--reason",
        "tighten wording",
        "--artifact",
        "article-1",
        "--artifact",
        "article-2",
    )
    lab.run_once(app=DEMO_APP)

    snapshot = item_snapshot(lab)
    states = Counter(s["state"] for s in snapshot.values())
    assert set(states) >= STOP_STATES, f"not every stop-line is occupied: {states}"
    assert all(s["state"] in STOP_STATES for s in snapshot.values())
    assert snapshot["service-health/billing-api"]["attempts"] == 3
    dump = lab.dump(without=UNCHANGED)

    summary = lab.run_once(app=DEMO_APP)  # a new worker process; discovery forced
    assert (summary["steps"], summary["discovered"]) == (0, 0)
    _assert_nothing_moved(lab, snapshot, dump)

    # time passes: every schedule is due again when a long-running worker starts
    long_ago = format_time(datetime.now(UTC) - timedelta(days=2))
    lab.execute("UPDATE schedules SET last_run_at = ?", (long_ago,))
    proc = _long_running_until(
        lab,
        DEMO_APP,
        lambda: all(r["last_run_at"] > long_ago for r in lab.query("SELECT * FROM schedules")),
        "every demo schedule to fire again",
        settle=1.0,
    )
    assert len(lab.query("SELECT * FROM schedules")) == 3
    assert proc.json()["steps"] == 0
    _assert_nothing_moved(lab, snapshot, dump)
    lab.verify()

    # only the recorded approval moves it on
    digest = snapshot["support-triage/msg-1041"]["proposal_digest"]
    lab.cli_json("approve", "support-triage/msg-1041", "--proposal", digest, "--actor", "alice")
    lab.run_once(app=DEMO_APP)
    assert lab.show("support-triage/msg-1041")["state"] == "completed"
    moved = item_snapshot(lab)
    del moved["support-triage/msg-1041"], snapshot["support-triage/msg-1041"]
    assert moved == snapshot
    lab.verify()
