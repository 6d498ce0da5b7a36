"""A database written by stopline before seals and the ledger (schema 3) upgrades by a recorded
step, and from then on every change to it is seen.

``tests/fixtures/legacy-v3.db`` was made by the release before seals (commit e14b63a):
``stopline demo`` plus ``stopline actors token alice``.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "legacy-v3.db"
CLI_HISTORY = (sys.executable, "-m", "stopline.cli.main", "history")


def states(cwd: Path) -> dict[str, str]:
    code, listed = cli(cwd, "items")
    assert code == 0, listed
    return {f"{i['automation']}/{i['key']}": i["state"] for i in listed["items"]}


# Approve as alice and run the demo's worker until it is idle, by a clock an hour after the
# evidence was observed (argv: ref, proposal digest, observed_at); prints the decision and
# the item's state.
APPROVE_AND_RUN = """
import sys
from datetime import timedelta
from stopline.controller import Controller
from stopline.core.canonical import parse_time
from stopline.examples.demo import app
from stopline.runtime.worker import Worker
from stopline.store import open_store

ref, proposal, observed = sys.argv[1:4]
now = [parse_time(observed) + timedelta(hours=1)]
store = open_store("sqlite:///legacy.db")
controller = Controller(store, clock=lambda: now[0])
print(controller.approve(ref, proposal=proposal, actor="alice").outcome.value)
worker = Worker(store, app, clock=lambda: now[0])
while worker.tick():
    now[0] += timedelta(seconds=1)
print(controller.item(ref).state.value)
store.close()
"""


def cli(cwd: Path, *args: str) -> tuple[int, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "stopline.cli.main", *args, "--db", "sqlite:///legacy.db", "--json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else done.stderr


def legacy(tmp_path: Path) -> Path:
    shutil.copy(FIXTURE, tmp_path / "legacy.db")
    return tmp_path


def test_the_fixture_is_a_schema_3_database() -> None:
    """The fixture predates the ledger: schema 3, no ledger table."""
    conn = sqlite3.connect(FIXTURE)
    try:
        assert conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == 3
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "ledger" not in tables and "items" in tables
    finally:
        conn.close()


def test_upgrade_records_what_is_there_and_verify_is_clean(tmp_path: Path) -> None:
    """migrate appends the ledger (every creation and person's event), a seal for each item as
    found, and registry events for tokens and policies; verify then finds nothing."""
    cwd = legacy(tmp_path)
    code, doc = cli(cwd, "migrate")
    assert code == 0 and 4 in doc["applied"]
    code, report = cli(cwd, "verify")
    assert code == 0, report
    assert report["ok"] is True and report["items"] == 8
    conn = sqlite3.connect(cwd / "legacy.db")
    try:
        creates = conn.execute("SELECT COUNT(*) FROM ledger WHERE kind = 'create'").fetchone()[0]
        seals = conn.execute("SELECT COUNT(*) FROM legacy_seals").fetchone()[0]
        changes = [r[0] for r in conn.execute("SELECT change FROM actor_events ORDER BY id")]
    finally:
        conn.close()
    assert creates == 8 and seals == 8
    assert "token_issue" in changes and "policy" in changes


def test_an_edit_after_the_upgrade_is_seen(tmp_path: Path) -> None:
    """A record edited after the upgrade no longer matches the seal recorded for it."""
    cwd = legacy(tmp_path)
    assert cli(cwd, "migrate")[0] == 0
    conn = sqlite3.connect(cwd / "legacy.db")
    try:
        conn.execute(
            "UPDATE items SET data = json_set(data, '$.proposal.params.grace_seconds', 999)"
            " WHERE state = 'awaiting_approval' AND automation = 'service-health'"
        )
        conn.commit()
    finally:
        conn.close()
    code, report = cli(cwd, "verify")
    assert code == 3
    assert {f["reason"] for f in report["findings"]} >= {"seal_mismatch", "proposal_altered"}


def test_upgraded_items_keep_working(tmp_path: Path) -> None:
    """After the upgrade, a legacy proposal can still be approved and carried out, a worker run
    moves nothing past a stop-line, and verify stays clean. The fixture's evidence is as old as
    the fixture and may be at most a day old when approved: the approval and the run that
    carries it out go by a clock an hour after the evidence was observed (a subprocess, with
    that clock handed to the controller and the worker), so the test does not age."""
    cwd = legacy(tmp_path)
    assert cli(cwd, "migrate")[0] == 0
    code, item = cli(cwd, "show", "support-triage/msg-1044")
    assert code == 0 and item["state"] == "awaiting_approval"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            APPROVE_AND_RUN,
            "support-triage/msg-1044",
            item["proposal"]["digest"],
            item["evidence"]["observed_at"],
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["applied", "completed"], done.stdout
    stopped = states(cwd)
    assert {"awaiting_approval", "exception", "exhausted", "ready_for_review"} <= set(
        stopped.values()
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "stopline.cli.main",
            "run",
            "stopline.examples.demo:app",
            "--once",
            "--linger",
            "0",
            "--db",
            "sqlite:///legacy.db",
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert states(cwd) == stopped  # by today's clock too: nothing moved past a stop-line
    code, report = cli(cwd, "verify")
    assert code == 0, report


def test_legacy_events_have_no_author_and_a_note_after_the_upgrade_verifies(
    tmp_path: Path,
) -> None:
    """Events written before authors were kept carry none and verify as they are (history shows
    '-'); a note on an upgraded item is recorded with its author, and verify stays clean."""
    cwd = legacy(tmp_path)
    assert cli(cwd, "migrate")[0] == 0
    code, history = cli(cwd, "history", "support-triage/msg-1043")
    assert code == 0
    assert all("author" not in e["detail"] for e in history["events"])
    code, decision = cli(
        cwd, "note", "support-triage/msg-1043", "--actor", "alice", "--body", "seen after upgrade"
    )
    assert code == 0 and decision["decision"] == "applied", decision
    code, history = cli(cwd, "history", "support-triage/msg-1043")
    assert history["events"][-1]["detail"]["author"] == {"kind": "human"}
    code, report = cli(cwd, "verify")
    assert code == 0 and report["ok"] is True, report
    text = subprocess.run(
        [*CLI_HISTORY, "support-triage/msg-1043", "--db", "sqlite:///legacy.db"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    rows = text.splitlines()
    assert "AUTHOR" in rows[0] and rows[1].split()[-1] == "-" and "human" in rows[4]
