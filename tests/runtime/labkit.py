"""The lab kit of the runtime reliability tests: real ``stopline`` processes on a real SQLite file.

:class:`Lab` runs the command line in subprocesses (``python -m stopline.cli.main``), starts
long-running workers with :class:`subprocess.Popen` so that tests can signal them, reads the
database and the lab app's effects file directly, and kills every process it started when the
test ends (each process leads its own process group, so ``--workers`` children go too).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from helpers import dump_url
from proc import Proc, run_cli, spawn

HERE = Path(__file__).resolve().parent
LAB_APP = f"{HERE / 'apps' / 'lab.py'}:app"
DEMO_APP = "stopline.examples.demo:app"
CLI = [sys.executable, "-m", "stopline.cli.main"]
T = TypeVar("T")


def _load_lab() -> Any:
    spec = importlib.util.spec_from_file_location("stopline_test_lab", HERE / "apps" / "lab.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lab_module = _load_lab()  # the lab app's helpers (its effects schema, key expansion)


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass
class Lab:
    """One test's database, effects file, drafts folder and processes."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)
    procs: list[Proc] = field(default_factory=list)

    @property
    def db_path(self) -> Path:
        return self.root / "stopline.db"

    @property
    def url(self) -> str:
        return f"sqlite:///{self.db_path}"

    @property
    def effects_path(self) -> Path:
        return self.root / "effects.db"

    @property
    def gate(self) -> Path:
        return self.root / "gate"

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("STOPLINE_TEST_", "STOPLINE_CRASH", "STOPLINE_DATABASE"))
        }
        env.update(
            STOPLINE_LOG="WARNING",
            STOPLINE_TEST_EFFECTS=str(self.effects_path),
            STOPLINE_TEST_GATE=str(self.gate),
            STOPLINE_DEMO_DRAFTS=str(self.root / "demo-drafts"),
            PYTHONUNBUFFERED="1",
        )
        env.update(self.env)
        env.update(extra or {})
        return env

    # --- processes ------------------------------------------------------------------------

    def cli(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
        ok: tuple[int, ...] = (0,),
    ) -> subprocess.CompletedProcess[str]:
        """Run one ``stopline`` command to its end; fail unless its exit status is in ``ok``."""
        return run_cli(
            [*CLI, *args, "--db", self.url],
            env=self.environment(env),
            cwd=self.root,
            timeout=timeout,
            ok=ok,
        )

    def cli_json(
        self, *args: str, env: Mapping[str, str] | None = None, ok: tuple[int, ...] = (0,)
    ) -> Any:
        return json.loads(self.cli(*args, "--json", env=env, ok=ok).stdout)

    def start(self, *args: str, env: Mapping[str, str] | None = None, name: str = "") -> Proc:
        """Start ``stopline ARGS`` in the background, in its own process group."""
        name = name or "proc"
        argv = [*CLI, *args, "--db", self.url]
        stem = self.root / f"{len(self.procs):02d}-{name}"
        proc = spawn(argv, env=self.environment(env), cwd=self.root, name=name, stem=stem)
        self.procs.append(proc)
        return proc

    def run_app(
        self, *args: str, app: str = LAB_APP, env: Mapping[str, str] | None = None, name: str = ""
    ) -> Proc:
        return self.start("run", app, "--json", *args, env=env, name=name)

    def run_once(
        self,
        *args: str,
        app: str = LAB_APP,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> Any:
        """``stopline run APP --once`` to its end; returns its JSON summary."""
        proc = self.run_app("--once", *args, app=app, env=env)
        code = proc.wait(timeout)
        assert code == 0, f"run --once exited {code}\n{proc.output()}"
        return proc.json()

    def pause(self, proc: Proc, attempts: int = 20) -> None:
        """SIGSTOP ``proc`` at a moment it holds no write transaction (a stopped writer would
        block every other process): if the write lock cannot be taken, let it run and retry."""
        for _ in range(attempts):
            os.kill(proc.pid, signal.SIGSTOP)
            conn = sqlite3.connect(self.db_path, timeout=0.5, isolation_level=None)
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
                return
            except sqlite3.OperationalError:
                os.kill(proc.pid, signal.SIGCONT)
                time.sleep(0.05)
            finally:
                conn.close()
        pytest.fail(f"{proc.name} always held the write lock when stopped", pytrace=False)

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.popen.poll() is not None:
                continue  # reaped: its id may belong to someone else by now
            for sig in (signal.SIGCONT, signal.SIGKILL):  # the group: --workers children too
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(timeout=10)

    # --- the database ---------------------------------------------------------------------

    def _connect(self, path: Path) -> sqlite3.Connection:
        assert path.exists(), f"{path} does not exist yet"  # connecting would create it
        conn = sqlite3.connect(path, timeout=30)
        conn.row_factory = sqlite3.Row
        return conn

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        conn = self._connect(self.db_path)
        try:
            return [dict(r) for r in conn.execute(sql, params)]
        finally:
            conn.close()

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        """A direct write (a test's stand-in for time passing); no stopline process may run."""
        conn = self._connect(self.db_path)
        try:
            with conn:
                conn.execute(sql, params)
        finally:
            conn.close()

    def effects_query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        conn = self._connect(self.effects_path)
        try:
            return [dict(r) for r in conn.execute(sql, params)]
        finally:
            conn.close()

    def items(self) -> dict[str, dict[str, Any]]:
        """Every item row by ``automation/key``, ``attempt_log`` and ``data`` parsed (each
        document the row references by digest put back from ``documents``)."""
        rows = self.query("SELECT * FROM items")
        bodies = {r["digest"]: r["body"] for r in self.query("SELECT digest, body FROM documents")}
        out = {}
        for row in rows:
            row["attempt_log"] = json.loads(row["attempt_log"])
            row["data"] = {
                k: json.loads(bodies[v["$doc"]])
                if isinstance(v, dict) and set(v) == {"$doc"}
                else v
                for k, v in json.loads(row["data"]).items()
            }
            out[f"{row['automation']}/{row['key']}"] = row
        return out

    def item(self, ref: str) -> dict[str, Any]:
        found = self.items().get(ref)
        assert found is not None, f"no item {ref}"
        return found

    def events(self, item_id: str) -> list[dict[str, Any]]:
        return self.query("SELECT * FROM events WHERE item_id = ? ORDER BY seq", (item_id,))

    def refusals(self) -> list[dict[str, Any]]:
        rows = self.query("SELECT * FROM refusals ORDER BY id")
        for row in rows:
            row["reasons"] = json.loads(row["reasons"])
        return rows

    def dump(self, *, without: tuple[str, ...] = ("refusals",)) -> dict[str, list[tuple]]:
        """Every row of every table but ``without``, sorted: equal dumps mean no write. Worker
        heartbeats are left out: every worker writes its own as it loops."""
        return dump_url(self.url, without=(*without, "worker_heartbeats"))

    def verify(self) -> dict[str, Any]:
        """``stopline verify``: exit status 0 and no problems."""
        done = self.cli("verify", "--json", ok=(0, 3))
        doc: dict[str, Any] = json.loads(done.stdout)
        assert done.returncode == 0 and doc["ok"], f"stopline verify: {doc['problems']}"
        return doc

    def show(self, ref: str) -> dict[str, Any]:
        doc: dict[str, Any] = self.cli_json("show", ref)
        return doc

    def runs(self, where: str = "1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        return self.effects_query(f"SELECT * FROM runs WHERE {where} ORDER BY id", params)

    def effects(self) -> list[dict[str, Any]]:
        return self.effects_query("SELECT * FROM effects ORDER BY item_id, step")

    def discoveries(self, automation: str = "lab") -> list[dict[str, Any]]:
        return self.effects_query(
            "SELECT * FROM discoveries WHERE automation = ? ORDER BY id", (automation,)
        )
