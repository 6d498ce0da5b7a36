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
    """After the upgrade, a worker run moves nothing past a stop-line and a legacy proposal can
    still be approved and carried out; verify stays clean."""
    cwd = legacy(tmp_path)
    assert cli(cwd, "migrate")[0] == 0
    code, item = cli(cwd, "show", "support-triage/msg-1044")
    assert code == 0 and item["state"] == "awaiting_approval"
    code, decision = cli(
        cwd,
        "approve",
        "support-triage/msg-1044",
        "--proposal",
        item["proposal"]["digest"],
        "--actor",
        "alice",
    )
    assert code == 0 and decision["decision"] == "applied", decision
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
    code, after = cli(cwd, "show", "support-triage/msg-1044")
    assert after["state"] == "completed", after
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
