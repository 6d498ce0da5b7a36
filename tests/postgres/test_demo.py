"""The demo and the foundation's restart test, unchanged, on PostgreSQL.

``stopline demo --db postgresql://...`` leaves items at the stop-lines; a revision whose drafts
vanished adds ``revision_failed``. New worker processes, a restart and the schedule firing again
then move no stopped item; only a recorded approval does.
"""

from __future__ import annotations

import shutil
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from proc import item_snapshot, wait_for

from .conftest import DEMO_APP, UNDUMPED, PgLab

pytestmark = pytest.mark.postgres

STOP_STATES = {"awaiting_approval", "ready_for_review", "exception", "exhausted", "revision_failed"}
MOVING = (*UNDUMPED, "schedules")  # and the schedule's clock


def stopline_tables(lab: PgLab) -> dict[str, Any]:
    return lab.dump(without=MOVING)


def run_once(lab: PgLab, *args: str) -> Any:
    """A new ``stopline run stopline.examples.demo:app --once`` process; its JSON summary."""
    proc = lab.start("run", DEMO_APP, "--once", "--json", *args)
    assert proc.wait(300) == 0, proc.output()
    return proc.json()


def assert_nothing_moved(lab: PgLab, before: dict[str, Any], tables: dict[str, Any]) -> None:
    assert item_snapshot(lab) == before
    assert stopline_tables(lab) == tables
    assert lab.refusals() == [], "a worker tried to move a stopped item"


def test_demo_stop_lines_survive_new_workers_restarts_and_the_schedule(pg_lab: PgLab) -> None:
    """Demo on PostgreSQL: stop-lines hold across new workers and the schedule; verify is clean."""
    demo = pg_lab.cli_json("demo", timeout=300)
    assert demo["db"] == pg_lab.url
    states = Counter(i["state"] for i in demo["items"])
    assert STOP_STATES - {"revision_failed"} <= set(states), states
    assert states["completed"] == 2  # the approved reply and the weekly digest

    # a revision whose drafts vanished from the folder: revision_failed
    for child in (pg_lab.root / "demo-drafts" / "digest").iterdir():
        shutil.rmtree(child)
    pg_lab.cli_json(
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
    run_once(pg_lab)
    before = item_snapshot(pg_lab)
    states = Counter(s["state"] for s in before.values())
    assert set(states) >= STOP_STATES, f"not every stop-line is occupied: {states}"
    assert before["service-health/billing-api"]["attempts"] == 3
    tables = stopline_tables(pg_lab)

    for extra in ((), ("--workers", "2")):  # new worker processes, discovery forced each time
        summary = run_once(pg_lab, *extra)
        assert (summary["steps"], summary["discovered"]) == (0, 0)
        assert_nothing_moved(pg_lab, before, tables)

    # time passes: every schedule is due again when a long-running worker starts
    long_ago = datetime.now(UTC) - timedelta(days=2)
    pg_lab.query("UPDATE schedules SET last_run_at = %s", (long_ago,))
    proc = pg_lab.start("run", DEMO_APP, "--json", name="long")
    wait_for(
        lambda: all(r["last_run_at"] > long_ago for r in pg_lab.query("SELECT * FROM schedules")),
        120,
        "every demo schedule to fire again",
    )
    proc.popen.terminate()
    assert proc.wait(60) == 0, proc.output()
    assert proc.json()["steps"] == 0
    assert len(pg_lab.query("SELECT * FROM schedules")) == 3
    assert_nothing_moved(pg_lab, before, tables)
    doc = pg_lab.verify()
    assert doc["items"] == len(before)

    # only a recorded approval moves an item on
    digest = before["support-triage/msg-1044"]["proposal_digest"]
    pg_lab.cli_json("approve", "support-triage/msg-1044", "--proposal", digest, "--actor", "alice")
    run_once(pg_lab)
    after = item_snapshot(pg_lab)
    assert after.pop("support-triage/msg-1044")["state"] == "completed"
    del before["support-triage/msg-1044"]
    assert after == before
    pg_lab.verify()
