"""The "physical limit": a minimal two-commit lease loop, on SQLite and on PostgreSQL.

One *step* of the loop is exactly two commits:

1. **claim** - one ``UPDATE ... RETURNING`` takes one due, unleased item, increments
   ``attempts`` and sets ``lease_owner``, ``lease_token`` and ``lease_expires_at``;
2. **outcome** - in one transaction, an ``UPDATE`` of the item (new state, lease cleared,
   ``version + 1``) guarded by the lease token, plus an ``INSERT`` of one event row.

Every item starts ``ready`` and needs ``steps`` outcomes: each outcome bumps ``version``;
the ``steps``-th one moves it to ``done``. After an outcome the item becomes due again at
the back of the queue (``next_eligible_at = now``). Nothing else happens in a step (no
payload, no policy): whatever a real controller does on top of this costs extra.

``run_loop`` runs ``workers`` spawned processes over a fresh store and returns a row;
``rows`` yields the matrix used by ``run.py``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from common import (
    BenchConfig,
    Row,
    create_database,
    database_cpu,
    drop_database,
    dsn_for,
    make_row,
    per_op_ms,
    short_error,
    temp_sqlite_dir,
    unique_db_name,
)

LEASE_SECONDS = 30.0
BUSY_TIMEOUT_MS = 10_000

# --------------------------------------------------------------------------- SQLite

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    id               INTEGER PRIMARY KEY,
    state            TEXT    NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    lease_owner      TEXT,
    lease_token      TEXT,
    lease_expires_at REAL,
    next_eligible_at REAL    NOT NULL,
    version          INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS events (
    id           INTEGER PRIMARY KEY,
    item_id      INTEGER NOT NULL,
    from_version INTEGER NOT NULL,
    to_state     TEXT    NOT NULL,
    lease_token  TEXT    NOT NULL,
    at           REAL    NOT NULL
);
"""
SQLITE_INDEX = "CREATE INDEX IF NOT EXISTS items_due ON items (state, next_eligible_at)"

SQLITE_CLAIM = """
UPDATE items
   SET attempts = attempts + 1, lease_owner = ?, lease_token = ?, lease_expires_at = ?
 WHERE id = (SELECT id FROM items
              WHERE state = 'ready' AND next_eligible_at <= ?
                AND (lease_expires_at IS NULL OR lease_expires_at < ?)
              ORDER BY next_eligible_at
              LIMIT 1)
RETURNING id, version
"""

SQLITE_OUTCOME = """
UPDATE items
   SET state = CASE WHEN version + 1 >= ? THEN 'done' ELSE 'ready' END,
       lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
       next_eligible_at = ?, version = version + 1
 WHERE id = ? AND lease_token = ? AND version = ?
RETURNING state
"""

SQLITE_EVENT = (
    "INSERT INTO events (item_id, from_version, to_state, lease_token, at) VALUES (?, ?, ?, ?, ?)"
)


def sqlite_connect(path: Path | str, sync: str = "FULL") -> sqlite3.Connection:
    """Autocommit connection (transactions are explicit), WAL, the given synchronous mode."""
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={sync}")
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return conn


def sqlite_init(path: Path, items: int) -> None:
    conn = sqlite_connect(path)
    conn.executescript(SQLITE_SCHEMA)
    now = time.time()
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO items (id, state, next_eligible_at) VALUES (?, 'ready', ?)",
        ((i, now - 1.0 - (items - i) * 1e-6) for i in range(1, items + 1)),
    )
    conn.execute(SQLITE_INDEX)
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.close()


class SqliteLoop:
    def __init__(self, path: str, sync: str) -> None:
        self.conn = sqlite_connect(path, sync)

    def claim(self, owner: str, token: str) -> tuple[int, int] | None:
        now = time.time()
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            row = c.execute(SQLITE_CLAIM, (owner, token, now + LEASE_SECONDS, now, now)).fetchone()
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        return (row[0], row[1]) if row else None

    def outcome(self, item_id: int, version: int, token: str, steps: int) -> bool:
        now = time.time()
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            row = c.execute(SQLITE_OUTCOME, (steps, now, item_id, token, version)).fetchone()
            if row is not None:
                c.execute(SQLITE_EVENT, (item_id, version, row[0], token, now))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        return row is not None

    def any_ready(self) -> bool:
        row = self.conn.execute("SELECT 1 FROM items WHERE state = 'ready' LIMIT 1").fetchone()
        return row is not None

    def close(self) -> None:
        self.conn.close()


# --------------------------------------------------------------------------- PostgreSQL

PG_SCHEMA = """
CREATE TABLE items (
    id               bigint PRIMARY KEY,
    state            text        NOT NULL,
    attempts         integer     NOT NULL DEFAULT 0,
    lease_owner      text,
    lease_token      text,
    lease_expires_at timestamptz,
    next_eligible_at timestamptz NOT NULL,
    version          integer     NOT NULL DEFAULT 0
);
CREATE TABLE events (
    id           bigserial PRIMARY KEY,
    item_id      bigint      NOT NULL,
    from_version integer     NOT NULL,
    to_state     text        NOT NULL,
    lease_token  text        NOT NULL,
    at           timestamptz NOT NULL
);
"""
PG_INDEX = "CREATE INDEX items_due ON items (state, next_eligible_at)"

PG_CLAIM = """
UPDATE items
   SET attempts = attempts + 1, lease_owner = %s, lease_token = %s,
       lease_expires_at = now() + make_interval(secs => %s)
 WHERE id = (SELECT id FROM items
              WHERE state = 'ready' AND next_eligible_at <= now()
                AND (lease_expires_at IS NULL OR lease_expires_at < now())
              ORDER BY next_eligible_at
              LIMIT 1
              FOR UPDATE SKIP LOCKED)
RETURNING id, version
"""

# Outcome as one statement (one round trip, one transaction): the UPDATE guarded by the
# token, and the event INSERT fed by its RETURNING, so a lost lease writes no event.
PG_OUTCOME_CTE = """
WITH u AS (
    UPDATE items
       SET state = CASE WHEN version + 1 >= %(steps)s THEN 'done' ELSE 'ready' END,
           lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
           next_eligible_at = now(), version = version + 1
     WHERE id = %(id)s AND lease_token = %(token)s AND version = %(version)s
    RETURNING id, state)
INSERT INTO events (item_id, from_version, to_state, lease_token, at)
SELECT id, %(version)s, state, %(token)s, now() FROM u
"""

PG_OUTCOME_UPDATE = """
UPDATE items
   SET state = CASE WHEN version + 1 >= %(steps)s THEN 'done' ELSE 'ready' END,
       lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
       next_eligible_at = now(), version = version + 1
 WHERE id = %(id)s AND lease_token = %(token)s AND version = %(version)s
RETURNING state
"""
PG_EVENT = """
INSERT INTO events (item_id, from_version, to_state, lease_token, at)
VALUES (%(id)s, %(version)s, %(state)s, %(token)s, now())
"""


def pg_init(dsn: str, items: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(PG_SCHEMA)
        conn.execute(
            "INSERT INTO items (id, state, next_eligible_at) "
            "SELECT g, 'ready', now() - interval '1 second' - (%s - g) * interval '1 microsecond' "
            "FROM generate_series(1, %s) AS g",
            (items, items),
        )
        conn.execute(PG_INDEX)
        conn.execute("VACUUM ANALYZE items")


class PgLoop:
    """``outcome_mode``: "cte" (one statement) or "txn" (BEGIN; UPDATE; INSERT; COMMIT)."""

    def __init__(self, dsn: str, outcome_mode: str = "cte") -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.mode = outcome_mode

    def claim(self, owner: str, token: str) -> tuple[int, int] | None:
        row = self.conn.execute(PG_CLAIM, (owner, token, LEASE_SECONDS)).fetchone()
        return (row[0], row[1]) if row else None

    def outcome(self, item_id: int, version: int, token: str, steps: int) -> bool:
        params: dict[str, Any] = {
            "steps": steps,
            "id": item_id,
            "token": token,
            "version": version,
        }
        if self.mode == "cte":
            return self.conn.execute(PG_OUTCOME_CTE, params).rowcount == 1
        with self.conn.transaction():
            row = self.conn.execute(PG_OUTCOME_UPDATE, params).fetchone()
            if row is None:
                return False
            params["state"] = row[0]
            self.conn.execute(PG_EVENT, params)
        return True

    def any_ready(self) -> bool:
        return (
            self.conn.execute("SELECT 1 FROM items WHERE state = 'ready' LIMIT 1").fetchone()
            is not None
        )

    def close(self) -> None:
        self.conn.close()


# --------------------------------------------------------------------------- workers


def _open(store: str, target: str, option: str) -> SqliteLoop | PgLoop:
    if option.startswith("sealed"):
        import floor_loop  # the same loop writing what stopline's guarantees need

        return floor_loop.open_loop(store, target, option)
    if store == "sqlite":
        return SqliteLoop(target, option)
    return PgLoop(target, option)


def worker_main(
    store: str,
    target: str,
    option: str,
    steps: int,
    worker_no: int,
    start: Any,
    results: Any,
) -> None:
    """One worker process: claim -> outcome until no item is left ``ready``."""
    if option.startswith("grouped:"):
        import floor_loop  # the guarantees' floor, outcomes committed in groups

        group = int(option.split(":", 1)[1])
        return floor_loop.grouped_main(target, group, steps, worker_no, start, results)
    loop = _open(store, target, option)
    owner = f"w{worker_no}-{os.getpid()}"
    results.put(("ready", worker_no))
    start.wait()
    cpu = time.process_time()
    done = lost = empty_claims = 0
    try:
        while True:
            token = os.urandom(12).hex()
            claimed = loop.claim(owner, token)
            if claimed is None:
                # Everything left may be leased by other workers: wait for them, or stop.
                if not loop.any_ready():
                    break
                empty_claims += 1
                time.sleep(0.0005)
                continue
            if loop.outcome(claimed[0], claimed[1], token, steps):
                done += 1
            else:
                lost += 1
    except BaseException as exc:
        results.put(("error", worker_no, repr(exc)))
        raise
    finally:
        loop.close()
    finished_at = time.monotonic()
    results.put(
        ("done", worker_no, done, lost, empty_claims, finished_at, time.process_time() - cpu)
    )


def _drive(
    store: str, target: str, option: str, workers: int, steps: int, timeout: float, total: int
):
    """(seconds, each worker's report, the database server's CPU ms per step or ``None``)."""
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    results = ctx.Queue()
    procs = [
        ctx.Process(
            target=worker_main,
            args=(store, target, option, steps, n, start, results),
            daemon=True,
        )
        for n in range(workers)
    ]
    for p in procs:
        p.start()
    try:
        deadline = time.monotonic() + timeout
        ready = 0
        while ready < workers:
            msg = results.get(timeout=max(0.1, deadline - time.monotonic()))
            if msg[0] == "error":
                raise RuntimeError(f"worker {msg[1]} failed: {msg[2]}")
            ready += 1
        db_cpu = database_cpu() if store == "pg" else None
        t0 = time.monotonic()
        start.set()
        finished: list[tuple[Any, ...]] = []
        while len(finished) < workers:
            msg = results.get(timeout=max(0.1, deadline - time.monotonic()))
            if msg[0] == "error":
                raise RuntimeError(f"worker {msg[1]} failed: {msg[2]}")
            finished.append(msg)
        elapsed = max(m[5] for m in finished) - t0
        db_ms = per_op_ms(db_cpu, database_cpu() if store == "pg" else None, total)
    finally:
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join(5)
    return elapsed, finished, db_ms


def _verify_sqlite(path: Path) -> tuple[int, int]:
    conn = sqlite_connect(path)
    events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    not_done = conn.execute("SELECT count(*) FROM items WHERE state <> 'done'").fetchone()[0]
    conn.close()
    return events, not_done


def _verify_pg(dsn: str) -> tuple[int, int]:
    with psycopg.connect(dsn) as conn:
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        not_done = conn.execute("SELECT count(*) FROM items WHERE state <> 'done'").fetchone()[0]
    return events, not_done


def run_loop(
    cfg: BenchConfig,
    store: str,
    workers: int,
    *,
    sqlite_sync: str = "FULL",
    pg_outcome: str = "cte",
    floor: int = 0,
) -> Row:
    """Run the raw loop once on a fresh store and return a row (rate = steps/s).

    ``floor``: the loop of ``floor_loop.py``, which writes what stopline's guarantees need,
    one step at a time (1) or, on PostgreSQL, that many outcomes in a commit.
    """
    items, steps = cfg.items, cfg.steps_per_item
    label = f"sqlite sync={sqlite_sync}" if store == "sqlite" else f"postgres outcome={pg_outcome}"
    option = sqlite_sync if store == "sqlite" else pg_outcome
    if floor:
        import floor_loop

        steps, label = floor_loop.STEPS, label.split(" outcome=")[0]
        option = f"sealed:{sqlite_sync}" if store == "sqlite" else "sealed"
        if floor > 1:
            option = f"grouped:{floor}"
    total = items * steps
    base = {
        "scenario": f"guarantees floor batch {floor}"
        if floor > 1
        else "guarantees floor"
        if floor
        else "raw lease loop",
        "store": label,
        "workers": workers,
        "items": items,
        "ops": total,
        "unit": "steps",
    }
    try:
        if store == "sqlite":
            with temp_sqlite_dir(cfg, "raw") as d:
                path = d / "raw.db"
                sqlite_init(path, items)
                if floor:
                    floor_loop.init("sqlite", str(path))
                elapsed, finished, db_ms = _drive(
                    "sqlite", str(path), option, workers, steps, cfg.scenario_timeout, total
                )
                events, not_done = _verify_sqlite(path)
        else:
            name = unique_db_name("raw")
            create_database(cfg.pg_admin_dsn, name)
            try:
                dsn = dsn_for(cfg.pg_admin_dsn, name)
                pg_init(dsn, items)
                if floor:
                    floor_loop.init("pg", dsn)
                elapsed, finished, db_ms = _drive(
                    "pg", dsn, option, workers, steps, cfg.scenario_timeout, total
                )
                events, not_done = _verify_pg(dsn)
            finally:
                drop_database(cfg.pg_admin_dsn, name)
    except Exception as exc:
        return make_row(**base, seconds=None, error=short_error(exc), error_full=repr(exc))
    ok = events == total and not_done == 0
    return make_row(
        **base,
        seconds=elapsed,
        error=None if ok else f"verification failed: events={events} not_done={not_done}",
        steps_per_item=steps,
        commits_per_step=2 if floor <= 1 else None,
        per_worker_steps=[m[2] for m in sorted(finished, key=lambda m: m[1])],
        lost_leases=sum(m[3] for m in finished),
        empty_claims=sum(m[4] for m in finished),
        sqlite_sync=sqlite_sync if store == "sqlite" else None,
        pg_outcome=pg_outcome if store != "sqlite" else None,
        cpu_ms_per_op=round(1000 * sum(m[6] for m in finished) / total, 3),
        db_cpu_ms_per_op=db_ms,
    )


def rows(cfg: BenchConfig) -> Iterator[Row]:
    """The raw-loop matrix: SQLite per sync mode, then PostgreSQL, each at every worker count."""
    for sync in cfg.sqlite_syncs:
        for w in cfg.workers:
            yield run_loop(cfg, "sqlite", w, sqlite_sync=sync)
    for w in cfg.workers:
        yield run_loop(cfg, "pg", w, pg_outcome="cte")
    # The same outcome as an explicit BEGIN/UPDATE/INSERT/COMMIT, as most code writes it.
    for w in sorted({1, max(cfg.workers)}):
        yield run_loop(cfg, "pg", w, pg_outcome="txn")
    # The loop writing what stopline's guarantees need, one step at a time (floor_loop.py).
    for store in ("sqlite", "pg"):
        for w in cfg.workers:
            yield run_loop(cfg, store, w, floor=1)
    # ... and on PostgreSQL with its outcomes committed in groups of 50, four workers.
    yield run_loop(cfg, "pg", max(cfg.workers), floor=50)
