"""The tamper lab: a realistic vault database built once per store by real ``stopline``
commands, copied for every edit, and the processes that act on a copy afterwards.

:func:`build_base` runs the vault app (``apps/vault.py``) and the people's commands that leave
an item at every stop-line, an approved item whose worker has not run yet, a completed delivery
with its remote object and an approved review packet (ready to publish), two-approver proposals
with and without one approval, a completed payment (and a backup of its row from before it ran),
tokens (one revoked with its actor) and an idempotency key. :meth:`Base.copy` makes a fresh copy of that database (a file copy on SQLite,
``CREATE DATABASE ... TEMPLATE`` on PostgreSQL) with its own folder, drafts and effects log.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from proc import Proc, free_port, run_cli, spawn, wait_for
from stopline.store import open_store, raw

from .apps.vault import ACTING, DRAFTS, read_log

HERE = Path(__file__).resolve().parent
VAULT_APP = f"{HERE / 'apps' / 'vault.py'}:app"
CLI = [sys.executable, "-m", "stopline.cli.main"]
KEYS = (
    "pay-approved",  # approved by alice; its worker has not run
    "pay-waiting",  # awaiting one approver
    "pay-done",  # approved and executed: completed
    "dual-half",  # a two-approver transfer with alice's approval
    "dual-fresh",  # a two-approver transfer with no approval yet
    "note-done",  # a note delivered to the folder, read back and its packet approved: completed
    "revfail-1",  # a note whose revision failed: revision_failed
    "review-1",  # ready_for_review
    "eyes-1",  # exception
    "broken-1",  # exhausted
)
IDEMPOTENCY_KEY = "approve-pay-approved-1"
FORWARD = ("delivering", "pending_readback", "completed", "revision_prepared", "revision_completed")


@dataclass
class Vault:
    """One database with its folder (drafts, effects log) and the processes run on it."""

    root: Path
    url: str
    procs: list[Proc] = field(default_factory=list)

    @property
    def log_path(self) -> Path:
        return self.root / "effects.jsonl"

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("STOPLINE_TEST_", "STOPLINE_CRASH", "STOPLINE_DATABASE"))
        }
        env.update(
            STOPLINE_LOG="ERROR",
            STOPLINE_TEST_LOG=str(self.log_path),
            STOPLINE_TEST_KEYS=",".join(KEYS),
            PYTHONUNBUFFERED="1",
        )
        env.update(extra or {})
        return env

    # --- processes ------------------------------------------------------------------------

    def cli(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        ok: tuple[int, ...] = (0,),
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        return run_cli(
            [*CLI, *args, "--db", self.url],
            env=self.environment(env),
            cwd=self.root,
            timeout=timeout,
            ok=ok,
        )

    def cli_json(self, *args: str, ok: tuple[int, ...] = (0,), **kw: Any) -> Any:
        return json.loads(self.cli(*args, "--json", ok=ok, **kw).stdout)

    def run_once(self, env: Mapping[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> Any:
        """``stopline run VAULT --once``: every due step, then exit."""
        return self.cli_json("run", VAULT_APP, "--once", "--linger", "0.5", env=env, ok=ok)

    def start(self, *args: str, env: Mapping[str, str] | None = None, name: str = "") -> Proc:
        """``stopline ARGS`` in the background, in its own process group."""
        name = f"{len(self.procs):02d}-{name or args[0]}"
        argv = [*CLI, *args, "--db", self.url]
        proc = spawn(
            argv, env=self.environment(env), cwd=self.root, name=name, stem=self.root / name
        )
        self.procs.append(proc)
        return proc

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.popen.poll() is not None:
                continue  # reaped: its id may belong to someone else by now
            for sig in (signal.SIGCONT, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(timeout=10)

    def pause(self, proc: Proc, attempts: int = 50) -> None:
        """SIGSTOP ``proc`` at a moment it holds no open write transaction (a stopped writer
        would block every other process): if it holds one, let it run and try again."""
        for _ in range(attempts):
            os.kill(proc.pid, signal.SIGSTOP)
            if not self._writer_open():
                return
            os.kill(proc.pid, signal.SIGCONT)
            time.sleep(0.05)
        pytest.fail(f"{proc.name} always held a write transaction when stopped", pytrace=False)

    def _writer_open(self) -> bool:
        if self.url.startswith("sqlite:"):
            path = self.url.removeprefix("sqlite:///")
            conn = sqlite3.connect(path, timeout=0.5, isolation_level=None)
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
                return False
            except sqlite3.OperationalError:
                return True
            finally:
                conn.close()
        rows = self.query(
            "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database()"
            " AND state IN ('idle in transaction', 'idle in transaction (aborted)')"
            " AND pid <> pg_backend_pid()"
        )
        return int(rows[0]["n"]) > 0

    # --- what happened ----------------------------------------------------------------------

    def effects(self) -> list[dict[str, Any]]:
        """Every call the vault app wrote down, in order."""
        return read_log(self.log_path)

    def acting(self) -> list[dict[str, Any]]:
        """The calls that act on the world: execute hooks, remote creates, updates, publishes."""
        return [e for e in self.effects() if e["call"] in ACTING]

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """Rows of one read (``?`` placeholders, on either database)."""
        store = open_store(self.url, migrate=False)
        try:
            with raw.reading(store) as cur:
                cur.execute(sql.replace("?", "%s") if store.dialect == "postgres" else sql, params)
                return [dict(r) for r in cur.fetchall()]
        finally:
            store.close()

    def item(self, key: str) -> Any:
        store = open_store(self.url, migrate=False)
        try:
            return store.find("vault", key)
        finally:
            store.close()

    def states(self) -> dict[str, str]:
        return {r["key"]: r["state"] for r in self.query("SELECT key, state FROM items")}

    def digest(self, key: str) -> str:
        return str(self.cli_json("show", f"vault/{key}")["proposal"]["digest"])

    def verify(self) -> dict[str, Any]:
        """``stopline verify --json`` (exit 0 when ok, 3 with findings)."""
        done = self.cli("verify", "--json", ok=(0, 3))
        doc: dict[str, Any] = json.loads(done.stdout)
        assert (done.returncode == 0) == doc["ok"], done.stdout
        return doc

    def incidents(self) -> int:
        """Events that stopped an item ``integrity_failed`` (what verify lists as incidents)."""
        rows = self.query("SELECT reasons FROM events")
        reasons = [
            json.loads(r) if isinstance(r, str) else list(r) for r in (x["reasons"] for x in rows)
        ]
        return sum("integrity_failed" in r for r in reasons)

    def rechecks(self) -> int:
        """Events that sent an item back to approval before an acting call (authority or
        freshness no longer held)."""
        rows = self.query("SELECT COUNT(*) AS n FROM events WHERE command = 'recheck_failed'")
        return int(rows[0]["n"])

    def refusal_reasons(self) -> list[list[str]]:
        """The reasons of every refusal recorded so far, oldest first."""
        rows = self.query("SELECT reasons FROM refusals ORDER BY id")
        return [
            json.loads(r) if isinstance(r, str) else list(r) for r in (x["reasons"] for x in rows)
        ]

    # --- an HTTP server on this database -------------------------------------------------------

    @contextlib.contextmanager
    def server(self) -> Iterator[str]:
        """A real ``stopline serve`` on a free loopback port; yields its base URL."""
        port = free_port()
        proc = self.start("serve", "--port", str(port), name="serve")
        base = f"http://127.0.0.1:{port}"

        def answers() -> bool:
            if proc.popen.poll() is not None:
                pytest.fail(f"the server exited\n{proc.output()}", pytrace=False)
            try:
                return httpx.get(f"{base}/openapi.json", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(answers, 60, "the server to answer", interval=0.1)
        try:
            yield base
        finally:
            proc.popen.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(timeout=10)


@dataclass
class Base:
    """The vault database built once; :meth:`copy` gives each edit its own."""

    kind: str
    vault: Vault
    copier: Callable[[Path], str]
    tokens: dict[str, str]
    backups: dict[str, Any]
    copies: int = 0

    def copy(self, root: Path) -> Vault:
        root.mkdir(parents=True, exist_ok=True)
        shutil.copytree(self.vault.root / DRAFTS, root / DRAFTS)
        self.copies += 1
        return Vault(root, self.copier(root))


def build_base(vault: Vault) -> tuple[dict[str, str], dict[str, Any]]:
    """Make the vault database with real commands; returns the tokens issued (actor ->
    plaintext) and the item rows kept as an old backup would keep them."""
    vault.run_once()
    vault.cli_json(
        "approve", "vault/pay-done", "--actor", "alice", "--proposal", vault.digest("pay-done")
    )
    backups = {"pay-done@approved": vault.item("pay-done")}
    vault.cli_json(
        "revise", "vault/revfail-1", "--actor", "carol", "--reason", "clearer", "--artifact", "note"
    )
    vault.run_once()
    vault.cli_json(
        "approve",
        "vault/pay-approved",
        "--actor",
        "alice",
        "--proposal",
        vault.digest("pay-approved"),
        "--idempotency-key",
        IDEMPOTENCY_KEY,
    )
    vault.cli_json(
        "approve", "vault/dual-half", "--actor", "alice", "--proposal", vault.digest("dual-half")
    )
    packet = vault.cli_json("show", "vault/note-done")["review_packet"]["digest"]
    vault.cli_json(
        "review", "vault/note-done", "--actor", "carol", "--packet", packet, "--verdict", "approve"
    )
    tokens = {name: vault.cli_json("actors", "token", name)["token"] for name in ("alice", "rita")}
    vault.cli_json("actors", "revoke", "rita")
    states = vault.states()
    expected = {
        "pay-approved": "approved",
        "pay-waiting": "awaiting_approval",
        "pay-done": "completed",
        "dual-half": "awaiting_approval",
        "dual-fresh": "awaiting_approval",
        "note-done": "completed",
        "revfail-1": "revision_failed",
        "review-1": "ready_for_review",
        "eyes-1": "exception",
        "broken-1": "exhausted",
    }
    assert states == expected, states
    assert vault.verify()["ok"]
    if vault.url.startswith("sqlite:"):  # one file to copy
        conn = sqlite3.connect(vault.url.removeprefix("sqlite:///"))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    return tokens, backups
