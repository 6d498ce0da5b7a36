"""The PostgreSQL fault tests: real ``stopline`` processes against a real PostgreSQL server.

:class:`PgLab` runs the command line in subprocesses (``python -m stopline.cli.main``) against
one test database (the ``postgres_url`` fixture of ``tests/conftest.py``: a fresh copy of the
migrated template), reads that database directly with psycopg, and kills every process it
started when the test ends (each process leads its own process group, so ``--workers``
children go too). :class:`PrivateServer` is a throw-away PostgreSQL instance of one test, made
with Debian's binaries, for the test that restarts the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from helpers import dump_url
from proc import Proc, free_port, run_cli, spawn

from .apps.fleet import SCHEMA

HERE = Path(__file__).resolve().parent
FLEET_APP = f"{HERE / 'apps' / 'fleet.py'}:app"
DEMO_APP = "stopline.examples.demo:app"
CLI = [sys.executable, "-m", "stopline.cli.main"]
PG_BIN = Path(os.environ.get("STOPLINE_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
# the audit of refusals; the hooks' own log of runs; every worker's heartbeat as it loops
UNDUMPED = ("refusals", "executions", "worker_heartbeats")


def query(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Rows of one statement on a short-lived autocommit connection."""
    with psycopg.connect(url, autocommit=True, row_factory=dict_row, connect_timeout=10) as conn:
        cur = conn.execute(sql, params)
        return list(cur.fetchall()) if cur.description else []


@dataclass
class PgLab:
    """One test's database, folder and processes."""

    root: Path
    url: str
    env: dict[str, str] = field(default_factory=dict)
    procs: list[Proc] = field(default_factory=list)

    def environment(self, extra: Mapping[str, Any] | None = None) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("STOPLINE_PG_", "STOPLINE_CRASH", "STOPLINE_DATABASE"))
        }
        env.update(
            STOPLINE_LOG="WARNING",
            STOPLINE_PG_EFFECTS_URL=self.url,
            STOPLINE_DEMO_DRAFTS=str(self.root / "demo-drafts"),
            PYTHONUNBUFFERED="1",
        )
        env.update(self.env)
        env.update({k: str(v) for k, v in (extra or {}).items()})
        return env

    # --- processes ------------------------------------------------------------------------

    def cli(
        self,
        *args: str,
        env: Mapping[str, Any] | None = None,
        db: str | None = None,
        timeout: float = 180,
        ok: tuple[int, ...] = (0,),
    ) -> subprocess.CompletedProcess[str]:
        """Run one ``stopline`` command to its end; fail unless its exit status is in ``ok``."""
        return run_cli(
            [*CLI, *args, "--db", db or self.url],
            env=self.environment(env),
            cwd=self.root,
            timeout=timeout,
            ok=ok,
        )

    def cli_json(self, *args: str, env: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return json.loads(self.cli(*args, "--json", env=env, **kw).stdout)

    def start(
        self,
        *args: str,
        env: Mapping[str, Any] | None = None,
        name: str = "",
        db: str | None = None,
    ) -> Proc:
        """Start ``stopline ARGS`` in the background, in its own process group."""
        name = name or f"proc{len(self.procs)}"
        argv = [*CLI, *args, "--db", db or self.url]
        stem = self.root / name
        proc = spawn(argv, env=self.environment(env), cwd=self.root, name=name, stem=stem)
        self.procs.append(proc)
        return proc

    def run_fleet(
        self,
        *args: str,
        env: Mapping[str, Any] | None = None,
        name: str = "",
        db: str | None = None,
    ) -> Proc:
        """``stopline run tests/postgres/apps/fleet.py:app --once --json ARGS`` in the background."""
        return self.start("run", FLEET_APP, "--once", "--json", *args, env=env, name=name, db=db)

    def cleanup(self) -> None:
        for proc in self.procs:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):  # the kernel reports it
                proc.popen.wait(timeout=15)

    # --- the database ---------------------------------------------------------------------

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        return query(self.url, sql, params)

    def scalar(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        rows = self.query(sql, params)
        return next(iter(rows[0].values())) if rows else None

    def create_effects_tables(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(SCHEMA)

    def states(self) -> dict[str, int]:
        rows = self.query("SELECT state, COUNT(*) AS n FROM items GROUP BY state")
        return {r["state"]: int(r["n"]) for r in rows}

    def completed(self) -> int:
        return int(self.scalar("SELECT COUNT(*) FROM items WHERE state = 'completed'"))

    def refusals(self) -> list[dict[str, Any]]:
        return self.query("SELECT * FROM refusals ORDER BY id")

    def dump(self, without: tuple[str, ...] = UNDUMPED) -> dict[str, Any]:
        """Every row of every table but ``without``, sorted: equal dumps mean that nothing was
        written."""
        return dump_url(self.url, without=without)

    def verify(self) -> dict[str, Any]:
        doc: dict[str, Any] = self.cli_json("verify", ok=(0, 3))
        assert doc["ok"], f"stopline verify found problems: {doc['problems'][:20]}"
        return doc


@pytest.fixture
def pg_lab(postgres_url: str, tmp_path: Path, lab_mode: dict[str, str]) -> Iterator[PgLab]:
    """A lab on a fresh, migrated database holding the fleet app's effect tables (its worker
    processes run in ``lab_mode``)."""
    lab = PgLab(tmp_path, postgres_url, dict(lab_mode))
    lab.create_effects_tables()
    try:
        yield lab
    finally:
        lab.cleanup()


# --- a private server ------------------------------------------------------------------------


class PrivateServer:
    """A PostgreSQL instance of one test: ``initdb`` into a temporary folder, own port.

    As root the binaries run as the ``postgres`` OS user (``initdb`` refuses root).
    """

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="stopline-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self.port = free_port()
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
            self.prefix = ["runuser", "-u", "postgres", "--"]
        self.options = (
            f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c max_connections=60"
        )
        try:
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-N")
            self.start()
        except BaseException:
            self.close()
            raise

    def _run(self, binary: str, *args: str) -> None:
        done = subprocess.run(
            [*self.prefix, str(PG_BIN / binary), *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{binary} {' '.join(args)}: {done.stdout}{done.stderr}")

    def pg_ctl(self, action: str, *args: str) -> None:
        self._run("pg_ctl", action, "-D", str(self.data), "-l", str(self.log), "-w", *args)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def start(self) -> None:
        """``pg_ctl start``: the server accepts connections when it returns."""
        self.pg_ctl("start", "-o", self.options)

    def stop(self) -> None:
        """``pg_ctl stop -m fast``: every session is ended; connections are refused."""
        self.pg_ctl("stop", "-m", "fast")

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every session is ended, the server is back when it returns."""
        self.pg_ctl("restart", "-m", "fast")

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self.pg_ctl("stop", "-m", "immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def private_server() -> Iterator[PrivateServer]:
    """A PostgreSQL instance of this test alone, or a skip (a failure if PostgreSQL is required)."""
    if not (PG_BIN / "initdb").exists():
        message = f"no PostgreSQL binaries in {PG_BIN} (set STOPLINE_TEST_PG_BIN)"
        if os.environ.get("STOPLINE_REQUIRE_POSTGRES") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    server = PrivateServer()
    try:
        yield server
    finally:
        server.close()
