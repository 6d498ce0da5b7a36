"""`stopline check APP`: stop-lines of a user's own automations under a killed worker, a new
worker and re-discovery; never acting. Through real `stopline` and worker processes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stopline.runtime.check import Phase, Report

APPS = Path(__file__).parent / "apps"
CLI = [sys.executable, "-m", "stopline.cli.main"]


def check(app: str, tmp_path: Path, *extra: str) -> tuple[int, Any]:
    done = subprocess.run(
        [*CLI, "check", f"{APPS / app}:app", "--json", "--timeout", "90", *extra],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=400,
    )
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_an_app_that_behaves_passes(tmp_path: Path) -> None:
    """Every item of the good app stops (awaiting approval, ready for review, exception,
    exhausted, completed with nothing to do) and none moves: exit 0, verify clean. Its execute
    hook raises if called: it never is (no failure is reported)."""
    code, doc = check("check_good.py", tmp_path)
    assert code == 0, doc
    assert doc["ok"] and doc["moved"] == [] and doc["new_items"] == [] and doc["failures"] == []
    assert doc["verify"]["ok"]
    states = {key: item["state"] for key, item in doc["items"].items()}
    assert states == {
        "good/restart": "awaiting_approval",
        "good/report": "ready_for_review",
        "good/unclear": "exception",
        "good/flaky": "exhausted",
        "good/fine": "completed",
    }
    assert doc["stop_states_reached"] == [
        "awaiting_approval",
        "exception",
        "exhausted",
        "ready_for_review",
    ]
    assert list(doc["stop_states_not_reached"]) == ["revision_failed"]
    assert all(phase["stopped"] for phase in doc["phases"])
    assert doc["would_act_without_approval"] == []


def test_an_app_that_misbehaves_is_reported_and_fails(tmp_path: Path) -> None:
    """The bad app's discovery approves waiting proposals from code and comments on stopped
    items, one key changes on every run, one action needs no approval: items moved (with the
    commands that moved them), a new item on re-discovery, "would act without approval"; exit
    3. Its execute hook is never run."""
    code, doc = check("check_bad.py", tmp_path)
    assert code == 3, doc
    moved = {m["item"]: m for m in doc["moved"]}
    assert moved["bad/restart"]["changes"]["state"]["before"] == "awaiting_approval"
    assert moved["bad/restart"]["events"][0].startswith("approve by robot")  # what came after
    # a write that moved no state is a move too: the note the bot left on the held item
    assert set(moved["bad/auto"]["changes"]) == {"version", "events", "head"}
    assert moved["bad/auto"]["events"] == ["note by robot: exception -> exception"]
    assert len(doc["new_items"]) == 1 and doc["new_items"][0].startswith("bad/run-")
    assert doc["would_act_without_approval"] == [
        {"item": "bad/auto", "action": "cleanup", "target": "disk"}
    ]
    # the item that would have acted is held by the check itself: its execute hook never ran,
    # and its stop is the check's, not one the app reached
    assert doc["items"]["bad/auto"]["state"] == "exception"
    assert not (tmp_path / "EXECUTED").exists() and doc["failures"] == []
    assert "exception" not in doc["stop_states_reached"]


def test_a_worker_that_ends_by_itself_fails_the_check(tmp_path: Path) -> None:
    """The app's worker process exits at its first discovery: each run says so at once, with
    the status, as a failure of the app's own code (exit 4), never as an app that passed."""
    code, doc = check("check_exits.py", tmp_path, "--timeout", "60")
    assert code == 4, doc
    assert [p["worker_exit"] for p in doc["phases"]] == [7, 7]
    assert [f.split(":")[0] for f in doc["failures"]] == [
        "the first worker exited by itself with status 7",
        "the second worker exited by itself with status 7",
    ]


def test_the_text_report_and_a_kept_scratch_database(tmp_path: Path) -> None:
    """Without --json the report is for a person; --keep leaves the scratch database, named."""
    done = subprocess.run(
        [*CLI, "check", f"{APPS / 'check_bad.py'}:app", "--keep", "--timeout", "90"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=400,
    )
    assert done.returncode == 3, done.stderr
    assert "MOVED:" in done.stdout and "would act without approval: bad/auto" in done.stdout
    assert "not reached: revision_failed" in done.stdout
    kept = done.stdout.rsplit("the scratch database is kept: ", 1)[1].strip()
    assert (Path(kept) / "check.db").is_file()
    shutil.rmtree(kept)


def test_an_app_that_cannot_load_is_usage(tmp_path: Path) -> None:
    """A missing app is exit 2 before any worker starts."""
    done = subprocess.run(
        [*CLI, "check", "no_such_module:app"], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 2 and "no_such_module" in done.stderr


def report(**changes: Any) -> Report:
    """A report with nothing found, but ``changes``."""
    found: dict[str, Any] = {
        "first": Phase("first", stopped=True),
        "second": Phase("second", stopped=True),
        "recorded": {},
        "moved": [],
        "new_items": [],
        "unapproved": [],
        "reached": [],
        "not_reached": {},
        "verify": {"ok": True},
    }
    return Report(**{**found, **changes})


@pytest.mark.parametrize(
    "finding",
    [{"moved": [{"item": "ops/a", "changes": {}, "events": []}]}, {"new_items": ["ops/b"]},
     {"verify": {"ok": False, "problems": ["ops/a: event_altered"]}}, {"verify": {}}],
    ids=["an-item-moved", "a-new-item", "verify-failed", "verify-did-not-say"],
)  # fmt: skip
def test_any_one_finding_alone_fails_the_check(finding: dict[str, Any]) -> None:
    assert report().ok
    assert not report(**finding).ok
    assert not report(**finding).to_plain()["ok"]
