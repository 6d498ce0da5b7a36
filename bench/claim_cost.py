"""Claim latency of the raw lease loop as the table grows.

For each backlog size (10^3, 10^5, 10^6 rows) the raw ``items`` table is filled so that
almost every row is either in a stop state (``done``/``stopped``) or ``ready`` but not due
(``next_eligible_at`` in the future); exactly ``DUE_ROWS`` rows are due. Then we time
``samples`` claims of the next due item - the same statement and the same commit as in
``raw.py`` (commit 1 of a step) - and report median and p95 in milliseconds. After each
timed claim the item is released (not timed) and becomes due again at the back of the
queue, so every sample sees the same number of due rows.

Bulk loading uses ``generate_series`` on PostgreSQL and a recursive CTE on SQLite, with
the index built after the load.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import raw
from common import BenchConfig, dsn_for, short_error, temp_database, temp_sqlite_dir

DUE_ROWS = 100
WARMUP = 20

# x <= due: due 'ready' rows; even x: 'ready' but due in 1 h .. 1 day; odd x: stop states.
SQLITE_FILL = """
INSERT INTO items (id, state, next_eligible_at)
WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < :rows)
SELECT x,
       CASE WHEN x <= :due THEN 'ready'
            WHEN x % 2 = 0 THEN 'ready'
            WHEN x % 4 = 1 THEN 'done'
            ELSE 'stopped' END,
       CASE WHEN x <= :due THEN :now - 60 + x * 1e-3
            WHEN x % 2 = 0 THEN :now + 3600 + (x % 82800)
            ELSE :now - (x % 86400) END
  FROM g
"""

PG_FILL = """
INSERT INTO items (id, state, next_eligible_at)
SELECT x,
       CASE WHEN x <= %(due)s THEN 'ready'
            WHEN x %% 2 = 0 THEN 'ready'
            WHEN x %% 4 = 1 THEN 'done'
            ELSE 'stopped' END,
       CASE WHEN x <= %(due)s THEN now() - interval '60 seconds' + x * interval '1 millisecond'
            WHEN x %% 2 = 0 THEN now() + interval '1 hour' + (x %% 82800) * interval '1 second'
            ELSE now() - (x %% 86400) * interval '1 second' END
  FROM generate_series(1, %(rows)s) AS x
"""


def _summary(samples: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return {
        "median_ms": round(statistics.median(ms), 4),
        "p95_ms": round(p95, 4),
        "mean_ms": round(statistics.fmean(ms), 4),
        "max_ms": round(ms[-1], 4),
    }


def sqlite_claim_cost(cfg: BenchConfig, backlog: int, sync: str = "FULL") -> dict[str, Any]:
    with temp_sqlite_dir(cfg, "claim") as d:
        path = d / "claim.db"
        t0 = time.monotonic()
        conn = raw.sqlite_connect(path, sync)
        conn.executescript(raw.SQLITE_SCHEMA)
        conn.execute("BEGIN")
        conn.execute(SQLITE_FILL, {"rows": backlog, "due": DUE_ROWS, "now": time.time()})
        conn.execute(raw.SQLITE_INDEX)
        conn.execute("COMMIT")
        conn.execute("ANALYZE")
        setup = time.monotonic() - t0
        plan = " | ".join(
            r[3]
            for r in conn.execute(
                "EXPLAIN QUERY PLAN " + raw.SQLITE_CLAIM, ("o", "t", 0.0, time.time(), time.time())
            )
        )
        conn.close()

        loop = raw.SqliteLoop(str(path), sync)
        samples: list[float] = []
        for i in range(WARMUP + cfg.claim_samples):
            token = os.urandom(12).hex()
            t = time.perf_counter()
            claimed = loop.claim("claim-cost", token)
            dt = time.perf_counter() - t
            if claimed is None:
                raise RuntimeError("no due item to claim")
            if i >= WARMUP:
                samples.append(dt)
            loop.conn.execute(
                "UPDATE items SET lease_owner = NULL, lease_token = NULL, "
                "lease_expires_at = NULL, next_eligible_at = ? WHERE id = ?",
                (time.time(), claimed[0]),
            )
        loop.close()
    return {"setup_seconds": round(setup, 2), "plan": plan, **_summary(samples)}


def pg_claim_cost(cfg: BenchConfig, backlog: int) -> dict[str, Any]:
    with temp_database(cfg.pg_admin_dsn, "claim") as name:
        dsn = dsn_for(cfg.pg_admin_dsn, name)
        t0 = time.monotonic()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(raw.PG_SCHEMA)
            conn.execute(PG_FILL, {"rows": backlog, "due": DUE_ROWS})
            conn.execute(raw.PG_INDEX)
            conn.execute("VACUUM ANALYZE items")
            setup = time.monotonic() - t0
            with conn.transaction():
                plan_rows = conn.execute(
                    "EXPLAIN " + raw.PG_CLAIM, ("o", "t", raw.LEASE_SECONDS)
                ).fetchall()
            plan = " | ".join(r[0].strip() for r in plan_rows if "Scan" in r[0])

        loop = raw.PgLoop(dsn)
        samples: list[float] = []
        try:
            for i in range(WARMUP + cfg.claim_samples):
                token = os.urandom(12).hex()
                t = time.perf_counter()
                claimed = loop.claim("claim-cost", token)
                dt = time.perf_counter() - t
                if claimed is None:
                    raise RuntimeError("no due item to claim")
                if i >= WARMUP:
                    samples.append(dt)
                loop.conn.execute(
                    "UPDATE items SET lease_owner = NULL, lease_token = NULL, "
                    "lease_expires_at = NULL, next_eligible_at = now() WHERE id = %s",
                    (claimed[0],),
                )
        finally:
            loop.close()
    return {"setup_seconds": round(setup, 2), "plan": plan, **_summary(samples)}


def rows(cfg: BenchConfig) -> Iterator[dict[str, Any]]:
    """One row per (store, backlog): median and p95 claim latency in ms."""
    for store in ("sqlite", "postgres"):
        for backlog in cfg.claim_backlogs:
            row: dict[str, Any] = {
                "scenario": "claim cost",
                "store": "sqlite sync=FULL" if store == "sqlite" else "postgres",
                "backlog": backlog,
                "due": DUE_ROWS,
                "samples": cfg.claim_samples,
                "error": None,
            }
            try:
                if store == "sqlite":
                    row.update(sqlite_claim_cost(cfg, backlog))
                else:
                    row.update(pg_claim_cost(cfg, backlog))
            except Exception as exc:
                row["error"] = short_error(exc)
            yield row
