"""Fixtures of the browser suite: Debian's Chromium driven by Playwright, against a real
``stopline serve`` process on a copy of the demo database with a token per demo actor.

Without Chromium (``/usr/bin/chromium``) or the ``playwright`` package the tests are skipped
with the reason, unless ``STOPLINE_REQUIRE_BROWSER=1`` (``.ci/run`` sets it) makes that a
failure. Playwright never downloads a browser here: it launches the system one.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

# The server suite's handle and environment helper, shared rather than copied.
from server.httphelp import Server, server_env, start_serve
from stopline.controller import Controller
from stopline.store import open_store

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = "/usr/bin/chromium"
REQUIRE_BROWSER_ENV = "STOPLINE_REQUIRE_BROWSER"
# Flags that keep Chromium from reaching for the network (this machine has none to offer).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 900}
ACTORS = ("alice", "bob", "carol", "dana")
PREPARE = (
    "import sys\n"
    "from stopline.runtime.runner import run\n"
    "run('stopline.examples.demo:app', sys.argv[1], once=True, linger=0.5)\n"
)


def _unavailable(message: str) -> NoReturn:
    if os.environ.get(REQUIRE_BROWSER_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_BROWSER_ENV}=1)", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    """Debian's Chromium, headless, launched once per session (or a skip / a failure)."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        _unavailable("browser tests need playwright (pip install -e '.[dev]')")
    if not os.access(CHROMIUM, os.X_OK):
        _unavailable(f"browser tests need Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, timeout=60_000
            )
        except Error as exc:
            _unavailable(f"Chromium at {CHROMIUM} did not start: {exc}")
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium: Browser) -> Iterator[Page]:
    """A fresh browser context (no cookies) and page at 1280x900."""
    context = chromium.new_context(viewport=VIEWPORT, locale="en-GB", timezone_id="UTC")
    # Bounds on a hang, not on speed: actions and expectations wait for their conditions.
    context.set_default_timeout(60_000)
    from playwright.sync_api import expect

    expect.set_options(timeout=60_000)
    try:
        yield context.new_page()
    finally:
        context.close()


# --- the demo database and the server --------------------------------------------------------


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo run once (in a child: the demo reads its env at import) into a SQLite file."""
    root = tmp_path_factory.mktemp("browser-demo")
    db = root / "demo.db"
    env = {**os.environ, "STOPLINE_DEMO_DRAFTS": str(root / "drafts")}
    subprocess.run(
        [sys.executable, "-c", PREPARE, f"sqlite:///{db}"], env=env, check=True, timeout=180
    )
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return db


@dataclass
class Demo:
    """A copy of the demo database of one test, and a token per demo actor."""

    url: str
    tokens: dict[str, str] = field(default_factory=dict)

    def item(self, ref: str) -> Any:
        store = open_store(self.url)
        try:
            found = Controller(store).item(ref)
            assert found is not None, ref
            return found
        finally:
            store.close()

    def controller(self) -> Any:
        """A controller on this database (close its ``store`` after use)."""
        return Controller(open_store(self.url))


@pytest.fixture
def demo(tmp_path: Path, demo_template: Path) -> Demo:
    db = tmp_path / "stopline.db"
    shutil.copyfile(demo_template, db)
    found = Demo(f"sqlite:///{db}")
    controller = found.controller()
    try:
        for name in ACTORS:
            token = controller.new_token(name)
            assert token is not None
            found.tokens[name] = token
    finally:
        controller.store.close()
    return found


@pytest.fixture
def server(demo: Demo, tmp_path: Path) -> Iterator[Server]:
    """A real ``stopline serve`` on the demo copy, on a free loopback port."""
    running = start_serve(["serve", "--db", demo.url], env=server_env({}), folder=tmp_path)
    try:
        yield running
    finally:
        running.stop()
