"""``stopline check APP``: do the app's stopped items stay stopped across a killed worker, a
new worker and re-discovery?

On a scratch database: a worker process runs discovery and the hooks until every item has
stopped (or the time bound passes); every item is recorded (state, attempts, proposal digest,
history); that worker is killed (SIGKILL); a new worker process fires the schedule again with
re-discovery and runs until the items stop again; then every recorded item is compared with
what it is now, and the event log is verified. Nothing acts: the check never approves, and
its workers run no execute or revise hook and write to no target
(:mod:`stopline.runtime.checkworker`). An item whose policy needs no approval would have
acted: it is reported as such.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.states import STOP_STATES, State
from ..store import Store, open_store
from ..verification import verify_store
from .checkworker import CHECK_OWNER

POLL = 0.1
# Stop states no run of an app reaches by itself: they follow a person's command.
NEEDS_A_PERSON = {State.REVISION_FAILED: "needs a person's `revise` of a completed delivery"}


def record(store: Store) -> dict[str, dict[str, Any]]:
    """What the check compares of every item, by ``AUTOMATION/KEY``."""
    out: dict[str, dict[str, Any]] = {}
    for item in store.list_items(limit=100_000):
        proposal = item.doc("proposal")
        out[f"{item.automation}/{item.key}"] = {
            "id": item.id,
            "state": item.state.value,
            "attempts": item.attempts,
            "max_attempts": item.max_attempts,
            "version": item.version,
            "events": item.seq,
            "head": item.head,
            "proposal_digest": None if proposal is None else proposal["digest"],
        }
    return out


@dataclass
class Phase:
    """One worker process's run."""

    name: str
    stopped: bool = False  # every item left the work states within the bound
    seconds: float = 0.0
    exit_code: int | None = None  # the worker ended by itself (it should not)
    failures: list[str] = field(default_factory=list)
    working: list[str] = field(default_factory=list)  # items still at work at the bound


@dataclass
class Report:
    first: Phase
    second: Phase
    recorded: dict[str, dict[str, Any]]
    moved: list[dict[str, Any]]
    new_items: list[str]
    unapproved: list[dict[str, Any]]
    reached: list[str]
    not_reached: dict[str, str]
    verify: dict[str, Any]
    database: str = ""

    @property
    def failures(self) -> list[str]:
        return self.first.failures + self.second.failures

    @property
    def ok(self) -> bool:
        return not self.moved and not self.new_items and bool(self.verify.get("ok"))

    def to_plain(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "moved": self.moved,
            "new_items": self.new_items,
            "would_act_without_approval": self.unapproved,
            "stop_states_reached": self.reached,
            "stop_states_not_reached": self.not_reached,
            "failures": self.failures,
            "items": self.recorded,
            "phases": [
                {
                    "name": p.name,
                    "stopped": p.stopped,
                    "seconds": round(p.seconds, 3),
                    "worker_exit": p.exit_code,
                    "still_working": p.working,
                }
                for p in (self.first, self.second)
            ],
            "verify": self.verify,
            "database": self.database,
        }


def _events(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip().endswith("}")]


def _at_work(store: Store) -> list[str]:
    items = store.list_items(state_class="work", limit=100_000)
    return [f"{i.automation}/{i.key} ({i.state.value})" for i in items]


def _run_phase(
    name: str, spec: str, url: str, folder: Path, timeout: float, env: Mapping[str, str]
) -> Phase:
    """Start a worker process, wait until it fired discovery and every item stopped (or
    ``timeout``), then kill it with SIGKILL."""
    phase = Phase(name)
    out = folder / f"{name}.jsonl"
    err = (folder / f"{name}.log").open("wb")
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "stopline.runtime.checkworker", spec, url, str(out)],
        stdout=subprocess.DEVNULL,
        stderr=err,
        env=dict(env),
        start_new_session=True,
    )
    store = open_store(url, migrate=False, check=False)
    try:
        while True:
            discovered = any(e.get("event") == "discovered" for e in _events(out))
            if discovered and not _at_work(store):
                phase.stopped = True
                break
            if proc.poll() is not None:
                phase.exit_code = proc.returncode
                break
            if time.monotonic() - started > timeout:
                break
            time.sleep(POLL)
        phase.working = _at_work(store)
    finally:
        store.close()
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)  # as a crash would: no cleanup, no last commit
        proc.wait()
        err.close()
    phase.seconds = time.monotonic() - started
    phase.failures = [e["line"] for e in _events(out) if e.get("event") == "failure"]
    if phase.exit_code is not None:
        log = (folder / f"{name}.log").read_text(encoding="utf-8", errors="replace")
        last = [line for line in log.splitlines() if line.strip()][-1:] or ["(no output)"]
        phase.failures.append(
            f"the {name} worker exited by itself with status {phase.exit_code}: {last[0]}"
        )
    return phase


def _unapproved(store: Store) -> list[dict[str, Any]]:
    """Items that reached ``approved`` with no person's approval: they would have acted."""
    found = []
    for item in store.list_items(limit=100_000):
        events = store.history(item.id)
        if any(e.command == "propose" and e.to_state is State.APPROVED for e in events):
            proposal = item.doc("proposal") or {}
            found.append(
                {
                    "item": f"{item.automation}/{item.key}",
                    "action": proposal.get("action"),
                    "target": proposal.get("target"),
                }
            )
    return found


def _events_after(store: Store, recorded: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """For each recorded item, the events written after it was recorded."""
    out: dict[str, list[str]] = {}
    for key, before in recorded.items():
        events = [e for e in store.history(before["id"]) if e.seq > before["events"]]
        if events:
            out[key] = [
                f"{e.command} by {e.actor}: {e.from_state.value if e.from_state else '-'} ->"
                f" {e.to_state.value}"
                for e in events
            ]
    return out


def _held_by_check(store: Store) -> set[str]:
    held = set()
    for item in store.list_items(state="exception", limit=100_000):
        exc = item.doc("exception") or {}
        if exc.get("owner") == CHECK_OWNER:
            held.add(f"{item.automation}/{item.key}")
    return held


def check(
    spec: str,
    *,
    timeout: float = 60.0,
    keep: bool = False,
    say: Callable[[str], None] = lambda line: None,
) -> Report:
    """Run the check of ``spec`` (``module:attribute`` or ``path/file.py:attribute``)."""
    folder = Path(tempfile.mkdtemp(prefix="stopline-check-"))
    url = f"sqlite:///{folder / 'check.db'}"
    env = {**os.environ, "STOPLINE_DATABASE_URL": url}
    env.pop("STOPLINE_CRASH_AT", None)
    try:
        open_store(url).close()
        say("1/3 a worker runs discovery and the hooks until every item stops")
        first = _run_phase("first", spec, url, folder, timeout, env)
        store = open_store(url, migrate=False)
        try:
            recorded = record(store)
            held = _held_by_check(store)
            unapproved = _unapproved(store)
        finally:
            store.close()
        say(f"    {len(recorded)} items recorded; the worker was killed (SIGKILL)")
        say("2/3 a new worker fires the schedule again, with re-discovery")
        second = _run_phase("second", spec, url, folder, timeout, env)
        say("3/3 every recorded item is compared with what it is now; verify")
        store = open_store(url, migrate=False)
        try:
            now = record(store)
            later = _events_after(store, recorded)
            verified = verify_store(store).to_plain()
        finally:
            store.close()
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    moved = []
    for key, before in recorded.items():
        after = now.get(key)
        if before["state"] in {s.value for s in State if s.is_work}:
            continue  # it was still at work when recorded: moving on is its job
        if after != before:
            changes = {
                k: {"before": before[k], "after": None if after is None else after[k]}
                for k in before
                if after is None or after[k] != before[k]
            }
            moved.append({"item": key, "changes": changes, "events": later.get(key, [])})
    new_items = sorted(set(now) - set(recorded))
    states = {v["state"] for k, v in recorded.items() if k not in held}
    reached = sorted(s.value for s in STOP_STATES if s.value in states)
    not_reached = {
        s.value: NEEDS_A_PERSON.get(s, "no item of this run stopped here")
        for s in sorted(STOP_STATES)
        if s.value not in states
    }
    return Report(
        first,
        second,
        recorded,
        moved,
        new_items,
        unapproved,
        reached,
        not_reached,
        verified,
        str(folder) if keep else "",
    )
