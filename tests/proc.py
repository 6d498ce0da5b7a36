"""Processes started by tests: a ``stopline`` subprocess with its output files, a free loopback
port for a server, and bounded polling. Shared by the runtime, PostgreSQL, integrity and server
tests."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

T = TypeVar("T")


def wait_for(
    predicate: Callable[[], T | None], timeout: float, what: str, interval: float = 0.02
) -> T:
    """Poll ``predicate`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}", pytrace=False)
        time.sleep(interval)


@dataclass
class Proc:
    """A started ``stopline`` process and where its output goes."""

    popen: subprocess.Popen[bytes]
    name: str
    out: Path
    err: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        return (
            f"[{self.name} stdout]\n{self.out.read_text()}\n"
            f"[{self.name} stderr]\n{self.err.read_text()[-6000:]}"
        )

    def wait(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"{self.name} (pid {self.pid}) did not exit within {timeout:.0f} s\n"
                + self.output(),
                pytrace=False,
            )

    def json(self) -> Any:
        return json.loads(self.out.read_text())

    def children(self) -> list[int]:
        """Pids of its ``--workers`` processes (multiprocessing spawns; not its helpers)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == self.pid and b"spawn_main" in cmdline:
                found.append(int(entry.name))
        return sorted(found)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on just now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spawn(argv: list[str], *, env: Mapping[str, str], cwd: Path, name: str, stem: Path) -> Proc:
    """Start ``argv`` in the background, in its own process group (so that killing the group
    ends its ``--workers`` children too), its output in ``STEM.out`` and ``STEM.err``."""
    out, err = stem.with_name(stem.name + ".out"), stem.with_name(stem.name + ".err")
    with out.open("wb") as stdout, err.open("wb") as stderr:
        popen = subprocess.Popen(
            argv, env=dict(env), cwd=cwd, stdout=stdout, stderr=stderr, start_new_session=True
        )
    return Proc(popen, name, out, err)


def run_cli(
    argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float, ok: tuple[int, ...]
) -> subprocess.CompletedProcess[str]:
    """Run one ``stopline`` command to its end; fail unless its exit status is in ``ok``."""
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if ok and done.returncode not in ok:
        pytest.fail(
            f"{' '.join(argv[2:])} exited {done.returncode}\n"
            f"stdout: {done.stdout}\nstderr: {done.stderr[-6000:]}",
            pytrace=False,
        )
    return done


class CliLab(Protocol):
    """A lab (SQLite or PostgreSQL) that runs the command line and queries its database."""

    def cli_json(self, *args: str) -> Any: ...

    def query(self, sql: str) -> list[Any]: ...


def item_snapshot(lab: CliLab) -> dict[str, dict[str, Any]]:
    """Per item, through the command line: state, attempts, proposal digest, history length."""
    rows = {r["id"]: r for r in lab.query("SELECT id, seq, head FROM items")}
    return {
        f"{i['automation']}/{i['key']}": {
            "state": i["state"],
            "attempts": i["attempts"],
            "max_attempts": i["max_attempts"],
            "next_eligible_at": i["next_eligible_at"],
            "proposal_digest": i["proposal_digest"],
            "history_length": rows[i["id"]]["seq"],
            "head": rows[i["id"]]["head"],
        }
        for i in lab.cli_json("items")["items"]
    }
