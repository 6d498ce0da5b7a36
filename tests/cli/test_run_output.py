"""`stopline run`: a summary at the end, --quiet and --json for scripts, and exit 4 when the
automations' own code fails (in the main process or in a --workers process)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

CLI = [sys.executable, "-m", "stopline.cli.main"]

APP = """
from stopline import App, Automation, Evidence, ReportForReview, TransientError

def observe(ctx):
    key = ctx.item.key
    if key.startswith("bug"):
        raise ValueError(f"no field 'host' in {key}")
    if key.startswith("flaky"):
        raise TransientError("timeout")  # declared: retried, never a failure of the code
    return Evidence({})

app = App([Automation("ops", lambda c: ["ok-1", "flaky-1", *KEYS], observe,
                      lambda c: ReportForReview({"summary": "fine"}))])
"""


def write(tmp_path: Path, keys: list[str]) -> str:
    (tmp_path / "ops_app.py").write_text(textwrap.dedent(APP).replace("KEYS", repr(keys)))
    return f"sqlite:///{tmp_path / 'ops.db'}"


def run(tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "run", "ops_app:app", "--once", "--linger", "0", "--db", url, *extra],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )


def test_quiet_prints_nothing_and_json_one_document(tmp_path: Path) -> None:
    """--quiet: no output and exit 0 when the code did not fail; --json: one document with
    the counts, where items are and no failures."""
    url = write(tmp_path, [])
    quiet = run(tmp_path, url, "--quiet")
    assert quiet.returncode == 0 and quiet.stdout == "", quiet.stderr
    doc = json.loads(run(tmp_path, url, "--json").stdout)
    assert doc["failures"] == [] and doc["states"]["ready_for_review"] == 1
    assert {"steps", "transitions", "discovered", "workers", "states"} <= set(doc)


def test_a_hook_that_raises_is_exit_4_and_named(tmp_path: Path) -> None:
    """An undeclared exception in observe: the item stops in exception as before, and run
    exits 4 naming the hook, the item and the error; --quiet still says it (on stderr)."""
    url = write(tmp_path, ["bug-1"])
    done = run(tmp_path, url, "--quiet")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "observe hook of ops on ops/bug-1 raised ValueError: no field 'host'" in done.stderr
    doc = json.loads(run(tmp_path, url, "--json").stdout)  # a second run: nothing failed now
    assert doc["failures"] == [] and doc["states"]["exception"] == 1


def test_failures_in_worker_processes_are_counted(tmp_path: Path) -> None:
    """With --workers 2 every failure is counted, whichever process ran the hook: exit 4."""
    url = write(tmp_path, [f"bug-{n}" for n in range(6)])
    done = run(tmp_path, url, "--workers", "2", "--json")
    assert done.returncode == 4, done.stderr
    doc = json.loads(done.stdout)
    assert len(doc["failures"]) == 6 and doc["states"]["exception"] == 6
