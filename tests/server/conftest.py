"""Fixtures of the HTTP suite: a demo database, tokens made by the controller, and a real
``stopline serve`` process on a free loopback port."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stopline.controller import Controller
from stopline.store import open_store

from .httphelp import Server, server_env, start_serve

PREPARE = (
    "import sys\n"
    "from stopline.runtime.runner import run\n"
    "run('stopline.examples.demo:app', sys.argv[1], once=True, linger=0.5)\n"
)
ACTORS = ("alice", "bob", "carol", "dana")


def prepare_demo(url: str, drafts: Path) -> None:
    """Run the demo app once against ``url`` (in a child: the demo reads its env at import)."""
    env = {**os.environ, "STOPLINE_DEMO_DRAFTS": str(drafts)}
    subprocess.run([sys.executable, "-c", PREPARE, url], env=env, check=True, timeout=180)


TEMPLATE_MAX_AGE = 300.0  # the demo's restart proposal accepts evidence up to 15 min old


class DemoTemplate:
    """The demo database, prepared once and made again when it is old enough that its
    evidence could go stale during a test."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.factory = factory
        self.path: Path | None = None
        self.made = 0.0

    def get(self) -> Path:
        if self.path is None or time.monotonic() - self.made > TEMPLATE_MAX_AGE:
            root = self.factory.mktemp("demo")
            db = root / "demo.db"
            prepare_demo(f"sqlite:///{db}", root / "drafts")
            con = sqlite3.connect(db)
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            con.close()
            self.path, self.made = db, time.monotonic()
        return self.path


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> DemoTemplate:
    return DemoTemplate(tmp_path_factory)


@dataclass
class Demo:
    url: str
    tokens: dict[str, str] = field(default_factory=dict)

    def store(self) -> Any:
        return open_store(self.url)

    def item(self, ref: str) -> Any:
        store = open_store(self.url)
        try:
            found = Controller(store).item(ref)
            assert found is not None, ref
            return found
        finally:
            store.close()


def add_tokens(found: Demo) -> Demo:
    """A token for alice, bob, carol, dana, and erin (an approver and operator whose token
    was revoked)."""
    store = open_store(found.url)
    try:
        controller = Controller(store)
        for name in ACTORS:
            token = controller.new_token(name)
            assert token is not None
            found.tokens[name] = token
        controller.add_actor("erin", ["approver", "operator"])
        erin = controller.new_token("erin")
        assert erin is not None
        found.tokens["erin"] = erin
        store.revoke_tokens("erin", datetime.now(UTC))
    finally:
        store.close()
    return found


@pytest.fixture
def demo_url(store_url: str, tmp_path: Path) -> str:
    """The demo on a fresh database of each kind (SQLite, PostgreSQL)."""
    prepare_demo(store_url, tmp_path / "drafts")
    return store_url


@pytest.fixture
def demo(tmp_path: Path, demo_template: DemoTemplate) -> Demo:
    """A copy of the demo database with a token for alice, bob, carol, dana, and erin (an
    approver and operator whose token was revoked)."""
    db = tmp_path / "stopline.db"
    shutil.copyfile(demo_template.get(), db)
    return add_tokens(Demo(f"sqlite:///{db}"))


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """``start_server(url, **env)``: a real ``stopline serve`` on a free loopback port
    (``command``: another server command, such as ``("mcp", "--http")``, that is up once
    ``ready_path`` answers at all)."""
    started: list[Server] = []

    def start(
        url: str, *, command: tuple[str, ...] = ("serve",), ready_path: str = "", **env: str
    ) -> Server:
        args = [*command, "--db", url]
        server = start_serve(args, env=server_env(env), folder=tmp_path, ready_path=ready_path)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def live(demo: Demo, start_server: Callable[..., Server]) -> Server:
    """A server on the demo database (default options)."""
    return start_server(demo.url)
