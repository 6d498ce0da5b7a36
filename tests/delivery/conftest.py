"""Fixtures of the delivery and revision tests: the digest app on a real target, a real database.

Every test that takes ``env`` runs twice: once against the ``directory`` target (a folder), once
against the ``webdav`` target talking HTTP to a real WsgiDAV server process on 127.0.0.1. The
server of the session logs every request (``-v``) to a file, so a test can count the requests
that reached it (:meth:`Site.requests`). The database is a real SQLite file; the command line
runs in process (:meth:`Env.cli`) or as the real ``stopline`` program (:meth:`Env.sub`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from stopline.cli.main import main
from stopline.core.canonical import format_time
from stopline.runtime.runner import run
from stopline.targets.base import Target
from stopline.targets.directory import DirectoryTarget
from stopline.targets.webdav import WebDAVTarget

from .apps.digest_app import CONFIG_ENV, KEYS, build_app, read_calls

from helpers import dump_url  # isort: skip
from webdav_server import DavServer, own_dav_server, start_wsgidav  # noqa: F401  # isort: skip

APP_FILE = Path(__file__).parent / "apps" / "digest_app.py"
APP = f"{APP_FILE}:app"
STOPLINE = Path(sys.executable).parent / "stopline"
ITEM = "digest/w1"
UNDUMPED = frozenset({"refusals"})
_REQUEST = re.compile(r'"([A-Z]+) (/[^"]*)"')

Dump = dict[str, list[tuple[Any, ...]]]


# --- a WsgiDAV process that logs its requests -------------------------------------------------


@dataclass
class LoggedDav:
    server: DavServer
    log: Path

    def requests(self, prefix: str) -> list[tuple[str, str]]:
        """``(method, path)`` of every request logged so far whose path starts with ``prefix``."""
        if not self.log.exists():
            return []
        found = []
        for line in self.log.read_text("utf-8", errors="replace").splitlines():
            if " - INFO " not in line:
                continue
            match = _REQUEST.search(line)
            if match and match.group(2).startswith(prefix):
                found.append((match.group(1), match.group(2)))
        return found


@pytest.fixture(scope="session")
def logged_dav(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoggedDav]:
    """One logging WsgiDAV process per test session (per xdist worker)."""
    base = tmp_path_factory.mktemp("delivery-dav")
    log = base / "requests.log"
    dav = LoggedDav(start_wsgidav(base / "root", log), log)
    try:
        yield dav
    finally:
        dav.server.resume()
        dav.server.stop()


# --- a target site: where the objects live ---------------------------------------------------


@dataclass
class Site:
    """One test's target: its description, where its objects are on disk, its request log."""

    kind: str
    desc: dict[str, Any]
    folder: Path
    attic: Path  # where :meth:`hide` keeps what it removed
    dav: LoggedDav | None = None
    prefix: str = ""

    def target(self) -> Target:
        """A fresh, unrecorded target on the same place (for the test's own reads)."""
        if self.kind == "directory":
            return DirectoryTarget(self.folder)
        return WebDAVTarget(self.desc["base_url"], timeout=5.0, trust_env=False)

    def objects(self) -> list[str]:
        """The remote ids of the stored objects (no hidden, temporary or marker files)."""
        names = (p.name for p in self.folder.iterdir() if not p.name.startswith("."))
        return sorted(n for n in names if not n.endswith(".published"))

    def snapshot(self) -> dict[str, tuple[int, bytes]]:
        """Every file under the folder: modification time and bytes."""
        out = {}
        for path in sorted(self.folder.rglob("*")):
            if path.is_file():
                out[str(path.relative_to(self.folder))] = (
                    path.stat().st_mtime_ns,
                    path.read_bytes(),
                )
        return out

    def hide(self, remote_id: str) -> None:
        """Remove an object behind stopline's back (a DELETE on the server for WebDAV)."""
        self.attic.mkdir(exist_ok=True)
        if self.kind == "directory":
            shutil.move(self.folder / remote_id, self.attic / remote_id)
            return
        shutil.copy2(self.folder / remote_id, self.attic / remote_id)
        response = httpx.delete(self.desc["base_url"] + remote_id, trust_env=False)
        assert response.status_code in (200, 204), response.status_code

    def restore(self, remote_id: str) -> None:
        """Put a hidden object back exactly as it was (a PUT on the server for WebDAV)."""
        if self.kind == "directory":
            shutil.move(self.attic / remote_id, self.folder / remote_id)
            return
        data = (self.attic / remote_id).read_bytes()
        response = httpx.put(self.desc["base_url"] + remote_id, content=data, trust_env=False)
        assert response.status_code == 201, response.status_code

    def requests(self) -> list[tuple[str, str]]:
        """The requests the WebDAV server received for this site (``[]`` for a folder)."""
        return [] if self.dav is None else self.dav.requests(self.prefix)

    def settled_requests(self) -> list[tuple[str, str]]:
        """:meth:`requests` once the log has stopped growing (a log line may trail its reply)."""
        seen = self.requests()
        while True:
            time.sleep(0.15)
            again = self.requests()
            if again == seen:
                return seen
            seen = again


@pytest.fixture(params=["directory", "webdav"])
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Site:
    """Each test runs once per target kind."""
    if request.param == "directory":
        folder = tmp_path / "drafts"
        folder.mkdir()
        return Site(
            "directory", {"kind": "directory", "root": str(folder)}, folder, tmp_path / "attic"
        )
    dav: LoggedDav = request.getfixturevalue("logged_dav")
    sub = f"d-{uuid.uuid4().hex[:12]}"
    folder = dav.server.root / sub
    folder.mkdir()
    desc = {"kind": "webdav", "base_url": f"{dav.server.url}{sub}/"}
    return Site("webdav", desc, folder, tmp_path / "attic", dav, f"/{sub}/")


# --- the database, the app and the command line -------------------------------------------------


def refusal_count(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        (n,) = conn.execute("SELECT COALESCE(SUM(count), 0) FROM refusals").fetchone()
    conn.close()
    return int(n)


@dataclass
class Env:
    """One test's database, target site, app configuration and command line."""

    tmp: Path
    site: Site
    capsys: pytest.CaptureFixture[str]
    config: dict[str, Any] = field(default_factory=dict)
    mode: dict[str, str] = field(default_factory=dict)  # the workers' settings (lab_mode)

    def __post_init__(self) -> None:
        self.config = {
            "target": self.site.desc,
            "calls": str(self.tmp / "calls.jsonl"),
            # Long enough that no stall of a loaded machine lets a live worker's lease run
            # out mid-step; a dead worker's lease is ended by expire_leases() instead.
            "lease_seconds": 30.0,
        }

    @property
    def db(self) -> Path:
        return self.tmp / "stopline.db"

    @property
    def url(self) -> str:
        return f"sqlite:///{self.db}"

    # --- the app -------------------------------------------------------------------------------

    def configure(self, **changes: Any) -> None:
        self.config.update(changes)

    def work(self, wrap: Callable[[Target], Target] | None = None, linger: float = 1.0) -> None:
        """``stopline run APP --once`` in process (``wrap`` decorates the target)."""
        run(
            build_app(self.config, wrap),
            self.url,
            once=True,
            linger=linger,
            concurrency=int(self.mode.get("STOPLINE_CONCURRENCY", "1")),
            batch=int(self.mode.get("STOPLINE_BATCH", "1")),
        )

    def expire_leases(self) -> None:
        """Stand in for a dead worker's lease running out: every lease held now ends one
        second in the past (no stopline process may run)."""
        past = format_time(datetime.now(UTC) - timedelta(seconds=1))
        with sqlite3.connect(self.db) as conn:
            conn.execute(
                "UPDATE items SET lease_expires_at = ? WHERE lease_owner IS NOT NULL", (past,)
            )
        conn.close()

    def work_cli(
        self, crash: str | None = None, linger: float = 1.0
    ) -> subprocess.CompletedProcess[str]:
        """``stopline run tests/delivery/apps/digest_app.py:app --once`` as a new process."""
        env = {**os.environ, CONFIG_ENV: json.dumps(self.config), **self.mode}
        env.pop("STOPLINE_CRASH_AT", None)
        if crash is not None:
            env["STOPLINE_CRASH_AT"] = crash
        return self.sub("run", APP, "--once", "--linger", str(linger), env=env)

    def deliver(self) -> dict[str, Any]:
        """Run the app until the item is delivered; returns ``show`` of the completed item."""
        self.work()
        item = self.show()
        assert item["state"] == "completed", item
        return item

    def calls(self, *ops: str) -> list[dict[str, Any]]:
        """The remote calls the app's target received (of ``ops``, if given)."""
        found = read_calls(self.config["calls"])
        return [c for c in found if not ops or c["op"] in ops]

    # --- the command line ------------------------------------------------------------------------

    def cli(self, *args: str) -> tuple[int, Any]:
        """``stopline ARGS --db URL --json`` in process: exit status and parsed output."""
        self.capsys.readouterr()
        code = main([*args, "--db", self.url, "--json"])
        out = self.capsys.readouterr().out
        return code, json.loads(out) if out.strip() else None

    def ok(self, *args: str) -> Any:
        code, doc = self.cli(*args)
        assert code == 0, doc
        return doc

    def applied(self, *args: str, state: str | None = None) -> dict[str, Any]:
        code, doc = self.cli(*args)
        assert (code, doc["decision"]) == (0, "applied"), doc
        if state is not None:
            assert doc["state"] == state, doc
        return dict(doc)

    def sub(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The real ``stopline`` program in a new process (``--db`` and ``--json`` added)."""
        argv = [str(STOPLINE), *args, "--db", self.url, "--json"]
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=180, env=env, check=False
        )

    def show(self, ref: str = ITEM) -> dict[str, Any]:
        doc: dict[str, Any] = self.ok("show", ref)
        return doc

    def history(self, ref: str = ITEM) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.ok("history", ref)["events"]
        return events

    def dump(self) -> Dump:
        """Every table but ``refusals``; ``sqlite_sequence`` without the refusal ids' counter."""
        return dump_url(self.url, without=UNDUMPED, sequences=True)

    def refused(self, args: Sequence[str], reasons: Sequence[str]) -> dict[str, Any]:
        """Run ``args``: exit 3, ``refused`` with exactly ``reasons``, nothing written, no call."""
        before, audit, calls = self.dump(), refusal_count(self.db), len(self.calls())
        snapshot = self.site.snapshot()
        code, doc = self.cli(*args)
        assert (code, doc["decision"]) == (3, "refused"), doc
        assert sorted(doc["reasons"]) == sorted(reasons), doc
        assert doc["sequence"] is None
        assert self.dump() == before, "a refused command wrote to the database"
        assert refusal_count(self.db) == audit + 1, "a refusal is counted once in the audit"
        assert len(self.calls()) == calls and self.site.snapshot() == snapshot
        return dict(doc)

    def revise(self, *keys: str, reason: str = "clearer wording", actor: str = "olga") -> list[str]:
        """The argument list of ``stopline revise ITEM`` for ``keys`` (default: both)."""
        args = ["revise", ITEM, "--actor", actor, "--reason", reason]
        for key in keys or KEYS:
            args += ["--artifact", key]
        return args

    # --- the target ------------------------------------------------------------------------------

    def assert_one_object_per_artifact(self) -> dict[str, Any]:
        """Exactly one remote object per artifact, each the bound one, reading back as recorded."""
        item = self.show()
        artifacts = {a["key"]: a for a in item["artifacts"]}
        assert sorted(artifacts) == sorted(KEYS)
        ids = sorted(a["remote_id"] for a in artifacts.values())
        assert self.site.objects() == ids, (self.site.objects(), ids)
        target = self.site.target()
        for a in artifacts.values():
            assert target.read(a["remote_id"]).readback_hash == a["content_hash"], a["key"]
        return item

    def verify_clean(self) -> None:
        doc = self.ok("verify")
        assert doc["ok"] is True and not doc["problems"], doc


@pytest.fixture
def env(
    tmp_path: Path, site: Site, capsys: pytest.CaptureFixture[str], lab_mode: dict[str, str]
) -> Env:
    return Env(tmp_path, site, capsys, mode=lab_mode)
