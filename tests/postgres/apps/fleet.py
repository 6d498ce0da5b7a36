"""A fleet app for the PostgreSQL fault tests: every step records its effect in the database.

Load it as ``stopline run tests/postgres/apps/fleet.py:app``. Each item goes observe -> propose
(an action that needs no approval) -> execute (nothing to deliver) -> read back -> completed.
The ``observe``, ``propose`` and ``execute`` hooks each write through their own psycopg
connection (``STOPLINE_PG_EFFECTS_URL``) into two tables the test creates (:data:`SCHEMA`):

* ``executions``: one row per run of a hook (pid, lease token, attempt), written first; a run
  is identified by its lease token (one claim), so a write retried after a lost connection
  whose commit did go through is not counted twice;
* ``effects``: the step's side effect, idempotent per ``(item_key, step)``: a second run of
  the same step writes nothing (``ON CONFLICT DO NOTHING``) and is visible only in
  ``executions``.

The hooks ride out a lost connection (a server restart) by reconnecting and retrying their
writes for up to two minutes; the effect being idempotent, a retry is harmless.

Environment:

* ``STOPLINE_PG_EFFECTS_URL`` (required): where ``effects`` and ``executions`` live.
* ``STOPLINE_PG_ITEMS``: how many keys discovery finds (``item-0000`` ..), default 0.
* ``STOPLINE_PG_LEASE``: lease seconds (default 30).
* ``STOPLINE_PG_SLEEP``: seconds every hook sleeps after its effect (default 0).
* ``STOPLINE_PG_ACTORS``: comma-separated actor names the app seeds (role ``operator``).
* ``STOPLINE_PG_BLOCK_KEY`` and ``STOPLINE_PG_GATE``: ``observe`` of that key blocks after
  recording its execution, before its effect, until the gate file exists (two minutes at most).
* ``STOPLINE_PG_PARK_DIR`` and ``STOPLINE_PG_GATE``: every process parks once in an
  ``observe``, after recording its execution: it writes the file ``PARK_DIR/<pid>`` (holding
  the item's key) and blocks until the gate file exists. It parks in its first ``observe``
  after ``STOPLINE_PG_PARK_AFTER`` (N, default 0) of them, and only once the file
  ``STOPLINE_PG_PARK_WHEN`` exists, if that is set. A parked worker holds its lease (renewing
  it) and has committed N items: a test can kill it knowing it abandons a step, or wait for
  every process to park knowing each one is working. With ``PARK_DIR`` set, a process blocked
  on ``BLOCK_KEY`` counts as parked (it writes its file too).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import Any

import psycopg

from stopline.core.policy import ApprovalPolicy, ApprovalRule, RetryPolicy
from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import Deliver, Evidence, Proposal

SCHEMA = """
CREATE TABLE effects (
    item_key text NOT NULL,
    step     text NOT NULL,
    pid      integer NOT NULL,
    token    bigint NOT NULL,
    at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (item_key, step)
);
CREATE TABLE executions (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_key text NOT NULL,
    step     text NOT NULL,
    pid      integer NOT NULL,
    token    bigint NOT NULL,
    attempt  integer NOT NULL,
    at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (item_key, step, token)
);
"""
STEPS = ("observe", "propose", "execute")
RETRY_FOR = 120.0
GATE_LIMIT = 120.0

_conn: psycopg.Connection[Any] | None = None
_observed = 0  # observe hooks run by this process
_parked = False  # whether this process has parked


def _env(name: str, default: str = "") -> str:
    return os.environ.get(f"STOPLINE_PG_{name}", default)


def _execute(sql: str, params: tuple[Any, ...]) -> None:
    """Run one autocommit statement, reconnecting and retrying while the server is away."""
    global _conn
    deadline = time.monotonic() + RETRY_FOR
    while True:
        try:
            if _conn is None or _conn.closed:
                _conn = psycopg.connect(_env("EFFECTS_URL"), autocommit=True, connect_timeout=5)
            _conn.execute(sql, params)
            return
        except psycopg.OperationalError:
            if _conn is not None:
                _conn.close()
            _conn = None
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _park(key: str) -> None:
    """Write this process's park file (when parking is on), then wait for the gate."""
    global _parked
    _parked = True
    folder = _env("PARK_DIR")
    if folder:
        marker = os.path.join(folder, str(os.getpid()))
        with open(marker + ".tmp", "w") as out:
            out.write(key)
        os.replace(marker + ".tmp", marker)  # the test never reads a half-written file
    _wait_for_gate()


def _wait_for_gate() -> None:
    gate = _env("GATE")
    deadline = time.monotonic() + GATE_LIMIT
    while not (gate and os.path.exists(gate)) and time.monotonic() < deadline:
        time.sleep(0.02)


def _maybe_park(key: str) -> None:
    global _observed
    _observed += 1
    if not _env("PARK_DIR") or _parked or _observed <= int(_env("PARK_AFTER", "0")):
        return
    when = _env("PARK_WHEN")
    if when and not os.path.exists(when):
        return
    _park(key)


def _step(ctx: HookContext, step: str) -> None:
    item = ctx.item
    assert item is not None
    who = (item.key, step, os.getpid(), item.lease_token)
    _execute(
        "INSERT INTO executions (item_key, step, pid, token, attempt) VALUES (%s, %s, %s, %s, %s)"
        " ON CONFLICT (item_key, step, token) DO NOTHING",
        (*who, item.attempts),
    )
    if step == "observe" and item.key == _env("BLOCK_KEY"):
        _park(item.key)
    elif step == "observe":
        _maybe_park(item.key)
    _execute(
        "INSERT INTO effects (item_key, step, pid, token) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (item_key, step) DO NOTHING",
        who,
    )
    pause = float(_env("SLEEP", "0"))
    if pause:
        time.sleep(pause)


def discover(ctx: HookContext) -> Iterable[str]:
    return [f"item-{n:04d}" for n in range(int(_env("ITEMS", "0")))]


def observe(ctx: HookContext) -> Any:
    _step(ctx, "observe")
    assert ctx.item is not None
    return Evidence({"key": ctx.item.key})


def propose(ctx: HookContext) -> Any:
    _step(ctx, "propose")
    assert ctx.item is not None
    return Proposal("tidy", {"key": ctx.item.key}, target=ctx.item.key)


def execute(ctx: HookContext) -> Any:
    _step(ctx, "execute")
    return Deliver()


app = App(
    [
        Automation(
            name="fleet",
            discover=discover,
            observe=observe,
            propose=propose,
            execute=execute,
            every=3600.0,
            lease_seconds=float(_env("LEASE", "30")),
            hook_timeout=GATE_LIMIT + 60,  # a parked or blocked hook waits for its gate
            retry=RetryPolicy(max_attempts=5, base_delay=0.05, max_delay=1.0),
            approval=ApprovalPolicy(rules={"tidy": ApprovalRule(approvals=0)}),
        )
    ],
    actors={name: ("operator",) for name in _env("ACTORS").split(",") if name},
)
