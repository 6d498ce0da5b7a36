"""Shared fixtures: a fresh store of each kind for every test.

PostgreSQL comes from ``STOPLINE_TEST_POSTGRES_URL`` (default: the local server, user
``postgres``). Once per test session (per xdist worker) a uniquely named template database is
created and migrated; every test gets its own copy (``CREATE DATABASE ... TEMPLATE``, made
ahead while the test before runs), dropped afterwards (on a thread of its own). If the server
is unreachable the PostgreSQL tests are skipped, with the reason in the summary, unless
``STOPLINE_REQUIRE_POSTGRES=1`` makes that a failure.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import secrets
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

import pytest

from stopline.store import Store, open_store

POSTGRES_URL_ENV = "STOPLINE_TEST_POSTGRES_URL"
REQUIRE_POSTGRES_ENV = "STOPLINE_REQUIRE_POSTGRES"
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
STORE_KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that ask for a PostgreSQL database carry the ``postgres`` marker."""
    for item in items:
        if "postgres_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)


# --- logging: each test starts from, and leaves, the logging it found -----------------------


@pytest.fixture(autouse=True)
def _logging_restored() -> Iterator[None]:
    """A test that runs the CLI in process has it configure logging: a handler on the root
    logger bound to that test's captured stderr, a level, and the format in the environment.
    Left in place, every later test's log records went to that closed stream, each through
    logging's error path, which prints a traceback (one property test of 2,000 retry warnings
    took 60 s instead of 0.3 s)."""
    from _pytest.logging import LogCaptureHandler

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    env = {name: os.environ.get(name) for name in ("STOPLINE_LOG_FORMAT", "STOPLINE_LOG")}
    yield
    for handler in list(root.handlers):
        if handler not in handlers and not isinstance(handler, LogCaptureHandler):
            root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers and not isinstance(handler, LogCaptureHandler):
            root.addHandler(handler)
    root.setLevel(level)
    for name, value in env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


# --- PostgreSQL --------------------------------------------------------------------------


class PostgresServer:
    """A reachable server holding this session's migrated template database."""

    def __init__(self, url: str, admin: Any) -> None:
        self.url = url
        self.admin = admin  # an autocommit psycopg connection to the maintenance database
        self.template = self._name("tpl")
        self._dropper: _AdminThread | None = None  # drops databases no test uses any more
        self._spares: _AdminThread | None = None  # makes the next copy of the template
        self._spare: Future[str] | None = None
        self.admin.execute(f'CREATE DATABASE "{self.template}"')
        try:
            open_store(self.url_for(self.template)).close()  # migrates
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _name(kind: str) -> str:
        return f"stopline_{kind}_{os.getpid()}_{secrets.token_hex(4)}"

    def url_for(self, database: str) -> str:
        return urlsplit(self.url)._replace(path=f"/{database}").geturl()

    def create(self, *, migrated: bool = True) -> str:
        """A new database (a copy of the migrated template, or empty); returns its name. A
        copy of the template is made ahead, on a thread of its own, while the test that takes
        the one before runs."""
        if not migrated:
            name = self._name("t")
            self.admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "template0"')
            return name
        if self._spares is None:
            self._spares = _AdminThread(self.url)
        spare, self._spare = self._spare, None
        name = spare.result() if spare is not None else self._copy_now()
        self._spare = self._spares.run(self._copy_sql, self._name("t"))
        return name

    def _copy_sql(self, name: str) -> str:
        return f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"'

    def _copy_now(self) -> str:
        name = self._name("t")
        self.admin.execute(self._copy_sql(name))
        return name

    def drop(self, database: str) -> None:
        """Drop a database, ending any session still connected to it."""
        self.admin.execute(_drop_sql(database))

    def discard(self, database: str) -> None:
        """Drop a database no one will use again, on a thread of its own: a drop waits on the
        disk (about a fifth of a second here), and the next test need not wait for it."""
        if self._dropper is None:
            self._dropper = _AdminThread(self.url)
        self._dropper.run(_drop_sql, database)

    def close(self) -> None:
        """Every database made ahead or discarded is gone before the session ends; a
        statement of those threads that failed fails the session's end."""
        try:
            if self._spare is not None:
                self.discard(self._spare.result())
            for thread in (self._spares, self._dropper):
                if thread is not None:
                    thread.close()
        finally:
            self.drop(self.template)
            self.admin.close()


def _drop_sql(database: str) -> str:
    return f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'


class _AdminThread:
    """One thread, with an autocommit connection of its own, that runs the statements handed
    to it in order: ``run(sql_for, name)`` runs ``sql_for(name)`` and its future gives
    ``name`` once that statement has run (or its error)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.queue: queue.Queue[tuple[str, str, Future[str]] | None] = queue.Queue()
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._run, name="test-databases", daemon=True)
        self.thread.start()

    def run(self, sql_for: Callable[[str], str], name: str) -> Future[str]:
        done: Future[str] = Future()
        self.queue.put((sql_for(name), name, done))
        return done

    def _run(self) -> None:
        import psycopg

        admin = None
        while (job := self.queue.get()) is not None:
            statement, name, done = job
            try:
                if admin is None:
                    admin = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
                admin.execute(statement)
            except Exception as error:
                self.errors.append(f"{statement}: {error}")
                done.set_exception(error)
            else:
                done.set_result(name)
        if admin is not None:
            admin.close()

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()
        if self.errors:
            raise RuntimeError(f"statements on test databases failed: {'; '.join(self.errors)}")


def _unavailable(message: str) -> NoReturn:
    if os.environ.get(REQUIRE_POSTGRES_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_POSTGRES_ENV}=1)", pytrace=False)
    pytest.skip(message)


def _connect(url: str) -> Any:
    """An autocommit connection to ``url``, or a skip (a failure if PostgreSQL is required)."""
    where = urlsplit(url).netloc.rpartition("@")[2] or "the default host"
    try:
        import psycopg
    except ImportError:
        _unavailable("PostgreSQL tests need the postgres extra (psycopg)")
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split())
        _unavailable(f"PostgreSQL not reachable at {where} (set {POSTGRES_URL_ENV}): {reason}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server and template, or a skip (a failure if required)."""
    url = os.environ.get(POSTGRES_URL_ENV) or DEFAULT_POSTGRES_URL
    server = PostgresServer(url, _connect(url))
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database of this test alone."""
    name = postgres_server.create()
    try:
        yield postgres_server.url_for(name)
    finally:
        postgres_server.discard(name)


@pytest.fixture
def blank_postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty (unmigrated) PostgreSQL database of this test alone."""
    name = postgres_server.create(migrated=False)
    try:
        yield postgres_server.url_for(name)
    finally:
        postgres_server.discard(name)


# --- every store ----------------------------------------------------------------------------


@pytest.fixture(params=STORE_KINDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh, migrated database; each test using it runs once per store."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'stopline.db'}"  # an absolute path: four slashes
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture(params=STORE_KINDS)
def blank_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh, empty database, once per store."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'blank.db'}"
    url: str = request.getfixturevalue("blank_postgres_url")
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """``open_store(store_url)``, closed after the test."""
    opened = open_store(store_url)
    try:
        yield opened
    finally:
        opened.close()


# --- the fuzz report (tests/fuzz): a plugin, so the xdist controller prints it too ----------


def pytest_configure(config: pytest.Config) -> None:
    from fuzz_report import FuzzReport

    config.pluginmanager.register(FuzzReport(), "stopline-fuzz-report")


# --- the tamper catalogue's table (tests/integrity) ---------------------------------------
# Here, not in tests/integrity/conftest.py: with ``pytest -n`` only the controller sees every
# report, and it loads no conftest below this one.

TAMPER_REPORT_ENV = "STOPLINE_TAMPER_REPORT"
_TAMPER_ROWS: list[dict[str, Any]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keep the row each tamper catalogue test recorded (``record_property("tamper", ...)``)."""
    if report.when == "call":
        for name, value in report.user_properties:
            if name == "tamper":
                _TAMPER_ROWS.append({**value, "outcome": report.outcome})


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the tamper catalogue's table and counts (and write them as JSON to the file
    named by ``STOPLINE_TAMPER_REPORT``)."""
    if not _TAMPER_ROWS:
        return
    from integrity.catalogue import summary

    text, doc = summary(_TAMPER_ROWS)
    terminalreporter.write_sep("=", "tamper catalogue")
    terminalreporter.write_line(text)
    target = os.environ.get(TAMPER_REPORT_ENV)
    if target:
        Path(target).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


# The worker settings a reliability lab runs its workers under: one step at a time ("single",
# the default), several items in flight, claimed and committed in groups ("batch"), and as
# many again claimed ahead, each waiting in its worker for a step thread ("ahead"), and several
# in flight as greenlets of the worker's one thread, two of them claimed ahead and queued for a
# place for their hooks ("lockstep"). A module that sets
# ``LAB_MODES = ("single", "batch", "ahead", "lockstep")`` runs each lab test in every mode.
WORKER_MODES: dict[str, dict[str, str]] = {
    "single": {},
    "batch": {"STOPLINE_CONCURRENCY": "4", "STOPLINE_BATCH": "4"},
    "ahead": {"STOPLINE_CONCURRENCY": "2", "STOPLINE_BATCH": "2", "STOPLINE_AHEAD": "2"},
    "lockstep": {
        "STOPLINE_CONCURRENCY": "4",
        "STOPLINE_BATCH": "4",
        "STOPLINE_AHEAD": "2",
        "STOPLINE_LOCKSTEP": "1",
    },
}


@pytest.fixture
def lab_mode(request: pytest.FixtureRequest) -> dict[str, str]:
    """The environment of this test's worker processes (``WORKER_MODES``)."""
    return dict(WORKER_MODES[getattr(request, "param", "single")])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    modes = getattr(metafunc.module, "LAB_MODES", None)
    if modes and "lab_mode" in metafunc.fixturenames:
        metafunc.parametrize("lab_mode", modes, indirect=True)
