"""The one reconnect-with-backoff helper, and the scheduler's store calls that go through it.

The scheduler tests run on a real SQLite file behind :class:`LossyStore`, which makes chosen
calls fail the way a dropped connection does: ``before`` (nothing was written) or ``after``
(the call went through and only its reply was lost).
"""

from __future__ import annotations

import logging
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg_pool import PoolTimeout

from stopline.core.policy import ApprovalPolicy, ApprovalRule
from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import Evidence, Proposal
from stopline.runtime.retrying import FIRST_DELAY, MAX_DELAY, Reconnect, Stopped, is_transient
from stopline.runtime.runner import run
from stopline.runtime.scheduler import Scheduler
from stopline.store import SchemaMismatch, Store, open_store

LOST = psycopg.errors.AdminShutdown("terminating connection due to administrator command")


class Recorder:
    """A ``Reconnect`` whose sleeps are recorded instead of slept, on a clock they advance."""

    def __init__(self, **options: Any) -> None:
        self.slept: list[float] = []
        self.now = 0.0
        self.reconnect = Reconnect(sleep=self._sleep, monotonic=lambda: self.now, **options)

    def _sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def failing(errors: list[BaseException], result: str = "done") -> Any:
    """A call that raises each of ``errors`` in turn, then returns ``result``."""
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return result

    call.calls = calls  # type: ignore[attr-defined]
    return call


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (LOST, True),
        (psycopg.OperationalError("connection failed: Connection refused"), True),
        (psycopg.errors.CannotConnectNow("the database system is starting up"), True),
        (psycopg.errors.DeadlockDetected("deadlock detected"), True),
        (PoolTimeout("couldn't get a connection after 30.00 sec"), True),
        (sqlite3.OperationalError("database is locked"), True),
        (psycopg.errors.ProgramLimitExceeded("index row size exceeds maximum"), False),
        (psycopg.errors.UniqueViolation("duplicate key"), False),
        (sqlite3.OperationalError("no such table: items"), False),
        (sqlite3.IntegrityError("UNIQUE constraint failed"), False),
        (ValueError("not a database error"), False),
    ],
)
def test_which_errors_are_transient(error: BaseException, transient: bool) -> None:
    """Unreachable or busy is transient; an error every try would meet again is not."""
    assert is_transient(error) is transient


NO_DRIVER = """
import sqlite3, sys
from stopline.store.errors import connection_errors, is_transient
assert connection_errors() == (sqlite3.OperationalError,), connection_errors()
assert is_transient(sqlite3.OperationalError("database is locked"))
assert "psycopg" not in sys.modules and "psycopg_pool" not in sys.modules
import psycopg, psycopg_pool
assert connection_errors() == (
    sqlite3.OperationalError, psycopg.OperationalError, psycopg_pool.PoolTimeout
), connection_errors()
print("ok")
"""


def test_the_transient_errors_import_no_driver_a_process_does_not_use() -> None:
    """A process on SQLite never imports psycopg (about 0.15 s of its start) to ask which
    errors are transient: a driver's error exists only once the driver is imported."""
    done = subprocess.run(
        [sys.executable, "-c", NO_DRIVER], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "ok", done.stderr


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=1, max_value=40))
def test_the_delay_doubles_from_the_first_up_to_the_cap(failures: int) -> None:
    """n failures sleep first, 2*first, 4*first ... capped, then the call's result returns."""
    rec = Recorder()
    call = failing([LOST] * failures)
    assert rec.reconnect.call("testing", call) == "done"
    assert rec.slept == [min(FIRST_DELAY * 2**n, MAX_DELAY) for n in range(failures)]
    assert len(call.calls) == failures + 1


def test_the_delay_stays_at_the_cap_however_long_the_outage() -> None:
    """Retry number 10,000 (about fourteen hours at the cap) still waits the cap."""
    assert Reconnect().delay(10_000) == MAX_DELAY
    assert Reconnect().delay(1) == FIRST_DELAY


def test_each_retry_is_logged_with_what_was_being_done(caplog: pytest.LogCaptureFixture) -> None:
    """One warning per retry naming the call, the error class and the wait."""
    rec = Recorder()
    with caplog.at_level(logging.WARNING, logger="stopline.reconnect"):
        rec.reconnect.call("registering automation x", failing([LOST, LOST]))
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "database unavailable while registering automation x (AdminShutdown: terminating"
        f" connection due to administrator command); retry {n} in {delay:.1f} s"
        for n, delay in ((1, 0.1), (2, 0.2))
    ]


def test_a_permanent_error_is_raised_at_once() -> None:
    """No retry and no sleep for an error that is not transient."""
    rec = Recorder()
    call = failing([sqlite3.OperationalError("no such table: items")])
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        rec.reconnect.call("reading", call)
    assert rec.slept == [] and len(call.calls) == 1


def test_patience_runs_out_with_the_last_error() -> None:
    """With ``patience``, failures for longer than that raise the last error."""
    rec = Recorder(patience=1.0)
    call = failing([LOST] * 10)
    with pytest.raises(psycopg.errors.AdminShutdown):
        rec.reconnect.call("reading", call)
    assert rec.slept == [0.1, 0.2, 0.4]  # the next wait (0.8 s) would end past 1 s
    assert len(call.calls) == 4


def test_a_stop_request_ends_the_wait() -> None:
    """Once ``stopping()`` is true, the next failure raises Stopped instead of sleeping."""
    asked: list[bool] = [False, False, True]
    rec = Recorder(stopping=lambda: asked.pop(0))
    call = failing([LOST] * 10)
    with pytest.raises(Stopped):
        rec.reconnect.call("reading", call)
    assert rec.slept == [0.1, 0.2] and len(call.calls) == 3


# --- the scheduler on a store that loses replies ---------------------------------------------


class LossyStore:
    """A real store whose calls named in ``plan`` fail once each, in plan order:
    ``(method, "before")`` fails without calling; ``(method, "after")`` calls, then fails."""

    def __init__(self, store: Store, plan: list[tuple[str, str]]) -> None:
        self._store = store
        self.plan = list(plan)
        self.failed: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._store, name)
        if not callable(real):
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.plan and self.plan[0][0] == name:
                when = self.plan.pop(0)[1]
                if when == "before":
                    self.failed.append((name, when))
                    raise LOST
                real(*args, **kwargs)
                self.failed.append((name, when))
                raise LOST
            return real(*args, **kwargs)

        return call


KEYS = [f"key-{n}" for n in range(6)]


def build_app(discovered: list[int]) -> App:
    def discover(ctx: HookContext) -> list[str]:
        discovered.append(1)
        return KEYS

    return App(
        [
            Automation(
                name="lab",
                discover=discover,
                observe=lambda ctx: Evidence({}),
                propose=lambda ctx: Proposal("tidy", {}),
                approval=ApprovalPolicy(rules={"tidy": ApprovalRule(approvals=0)}),
            )
        ],
        actors={"ana": ("operator",), "bo": ("approver",)},
    )


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'stopline.db'}")
    try:
        yield opened
    finally:
        opened.close()


PLANS = {
    "inserts-cut-off": [("insert", "before"), ("find", "before"), ("insert", "before")],
    "insert-replies-lost": [("insert", "after"), ("insert", "after")],
    "a-lost-reply-then-a-failed-check": [("insert", "after"), ("find", "before")],
    "schedule-and-registration": [
        ("register_automation", "after"),
        ("set_actor", "after"),
        ("actors", "before"),
        ("last_discovery", "before"),
        ("set_last_discovery", "before"),
    ],
}


@pytest.mark.parametrize("plan", PLANS.values(), ids=PLANS.keys())
def test_the_scheduler_rides_out_lost_calls_with_an_exact_account(
    sqlite_store: Store, plan: list[tuple[str, str]]
) -> None:
    """Calls cut off before or after they wrote: each key once, counted new once; each actor
    seeded with one audit event; discovery's hook run once."""
    discovered: list[int] = []
    lossy = LossyStore(sqlite_store, plan)
    rec = Recorder()
    scheduler = Scheduler(lossy, build_app(discovered), reconnect=rec.reconnect)  # type: ignore[arg-type]
    scheduler.register()
    (fired,) = scheduler.tick()
    assert lossy.plan == [], f"these faults never fired: {lossy.plan}"
    assert (fired.new, fired.existing, fired.rejected) == (len(KEYS), 0, 0)
    assert discovered == [1], "discovery ran again"
    items = sqlite_store.list_items()
    assert sorted(i.key for i in items) == KEYS
    assert all(len(sqlite_store.history(i.id)) == 1 for i in items)
    seeded = [e["actor"] for e in sqlite_store.actor_events() if e["change"] != "policy"]
    assert sorted(seeded) == ["ana", "bo"]
    assert sqlite_store.last_discovery("lab") is not None
    assert len(rec.slept) == len(plan)
    (again,) = scheduler.tick(force=True)
    assert (again.new, again.existing) == (0, len(KEYS)), "re-discovery is a no-op"


def test_run_on_a_schema_it_cannot_use_fails_at_once_and_restores_its_signals(
    tmp_path: Path,
) -> None:
    """A newer schema is not transient: run() raises it without retrying, handlers restored."""
    url = f"sqlite:///{tmp_path / 'stopline.db'}"
    open_store(url).close()
    with sqlite3.connect(tmp_path / "stopline.db") as conn:
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'x', '')"
        )
    conn.close()
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with pytest.raises(SchemaMismatch, match="version 99"):
        run(build_app([]), url, once=True)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
