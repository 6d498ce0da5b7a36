"""``stopline run --workers 2`` as the real program: what a worker process does is counted in
the run's summary, and a stop signal to the run ends its worker processes, each after the step
it is running (runtime/runner.py). The app (``apps/processes.py``) makes sure a worker process
takes part: the main process's first hook waits until one has begun a hook."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from proc import spawn, wait_for
from stopline.store import open_store

APP = str(Path(__file__).parent / "apps" / "processes.py") + ":app"
CLI = [sys.executable, "-m", "stopline.cli.main"]


def _env(root: Path, hold: str) -> dict[str, str]:
    return {**os.environ, "STOPLINE_TEST_ROOT": str(root), "STOPLINE_TEST_HOLD": hold}


def _states(url: str) -> dict[str, str]:
    store = open_store(url)
    try:
        return {item.key: item.state.value for item, _ in store.iter_items_with_events()}
    finally:
        store.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_what_a_worker_process_does_is_in_the_runs_summary(store_url: str, tmp_path: Path) -> None:
    """The worker process's propose hook raises: its failures, claims and transitions are the
    run's (exit 4, each failure named), as much as the main process's own."""
    run = spawn(
        [*CLI, "run", APP, "--once", "--linger", "0", "--workers", "2", "--json", "--db", store_url],
        env=_env(tmp_path, "fail"), cwd=tmp_path, name="run", stem=tmp_path / "run",
    )  # fmt: skip
    assert run.wait(300) == 4, run.output()
    doc = run.json()
    states = _states(store_url)
    stopped = sorted(key for key, state in states.items() if state == "exception")
    assert stopped, states  # the worker process ran at least one item
    assert sorted(doc["failures"]) == [
        f"propose hook of ops on ops/{key} raised ValueError: raised in a worker process"
        for key in stopped
    ]
    # one claim an item, two transitions (observed, then proposed or stopped)
    assert (doc["steps"], doc["transitions"], doc["discovered"]) == (4, 8, 4), doc


def test_a_stop_signal_ends_the_worker_processes_after_their_steps(
    store_url: str, tmp_path: Path
) -> None:
    """SIGTERM to the run alone (as a service manager sends it): the run passes it on to its
    worker process, which finishes the step it is in (its hook waits for ``release``) and
    commits it before it exits; then the run exits, leaving no process behind."""
    run = spawn(
        [*CLI, "run", APP, "--workers", "2", "--json", "--db", store_url],
        env=_env(tmp_path, "release"), cwd=tmp_path, name="run", stem=tmp_path / "run",
    )  # fmt: skip
    try:
        begun = wait_for(lambda: list(tmp_path.glob("child-*")), 120, "the worker process's hook")
        child = int(begun[0].name.split("-")[1])
        key = begun[0].read_text()
        os.kill(run.pid, signal.SIGTERM)
        # A worker process killed by the signal (no handler) would be gone in moments; give it
        # those moments, then let its hook end. Nothing below depends on how long this took.
        deadline = time.monotonic() + 5
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        (tmp_path / "release").write_text("")
        assert run.wait(120) == 0, run.output()
        assert not _alive(child)
        assert _states(store_url)[key] == "ready_for_review", run.output()
        assert json.loads(run.out.read_text())["workers"] == 2
    finally:
        if run.popen.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.popen.wait()


def test_a_worker_process_runs_as_many_hooks_at_once_as_the_run_was_asked(
    store_url: str, tmp_path: Path
) -> None:
    """``--concurrency 2`` reaches the worker process too: every hook waits until it runs two
    at once (one at a time, its first would wait in vain and every item would stop)."""
    run = spawn(
        [*CLI, "run", APP, "--once", "--linger", "0", "--workers", "2", "--concurrency", "2",
         "--json", "--db", store_url],
        env=_env(tmp_path, "pair"), cwd=tmp_path, name="run", stem=tmp_path / "run",
    )  # fmt: skip
    assert run.wait(300) == 0, run.output()
    assert run.json()["failures"] == []
    assert set(_states(store_url).values()) == {"ready_for_review"}
    assert len({path.name.split("-")[1] for path in tmp_path.glob("child-*")}) == 1
