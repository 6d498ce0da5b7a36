"""Claim latency of stopline's own store as the backlog grows.

Like ``claim_cost.py`` for the raw table, but through ``Store.claim`` on stopline's schema and
indexes: 10^3, 10^5 and 10^6 items, of which ``DUE_ROWS`` are due work and the rest are stopped,
terminal, or work that is not due for an hour or more. Each timed claim is followed (untimed) by
a release that puts the item back at the end of the due queue.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from common import BenchConfig, temp_database, temp_sqlite_dir, url_for

DUE_ROWS = 100
WARMUP = 20
BLANK = '{"input": {}}'

SQLITE_FILL = """
INSERT INTO items (id, automation, key, state, state_class, version, seq, head, created_at,
    updated_at, attempts, max_attempts, next_eligible_at, lease_token, attempt_log, data)
WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < :rows)
SELECT 'itm_' || x, 'bench', 'k' || x,
       CASE WHEN x <= :due OR x % 2 = 0 THEN 'observing'
            WHEN x % 4 = 1 THEN 'awaiting_approval' ELSE 'completed' END,
       CASE WHEN x <= :due OR x % 2 = 0 THEN 'work'
            WHEN x % 4 = 1 THEN 'stop' ELSE 'terminal' END,
       1, 1, '', :now, :now, 0, 3,
       CASE WHEN x <= :due THEN :past ELSE :later END,
       0, '[]', :blank
  FROM g
"""

PG_FILL = """
INSERT INTO items (id, automation, key, state, state_class, version, seq, head, created_at,
    updated_at, attempts, max_attempts, next_eligible_at, lease_token, attempt_log, data)
SELECT 'itm_' || x, 'bench', 'k' || x,
       CASE WHEN x <= %(due)s OR x %% 2 = 0 THEN 'observing'
            WHEN x %% 4 = 1 THEN 'awaiting_approval' ELSE 'completed' END,
       CASE WHEN x <= %(due)s OR x %% 2 = 0 THEN 'work'
            WHEN x %% 4 = 1 THEN 'stop' ELSE 'terminal' END,
       1, 1, '', %(now)s, %(now)s, 0, 3,
       CASE WHEN x <= %(due)s THEN %(past)s ELSE %(later)s END,
       0, '[]', %(blank)s
  FROM generate_series(1, %(rows)s) AS x
"""

RELEASE = (
    "UPDATE items SET lease_owner = NULL, lease_expires_at = NULL, claimed_at = NULL,"
    " attempts = 0, next_eligible_at = {now} WHERE id = {id}"
)


def _fill_sqlite(path: str, rows: int, now: datetime) -> None:
    import sqlite3

    conn = sqlite3.connect(path)
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ"
    conn.execute(
        SQLITE_FILL,
        {
            "rows": rows,
            "due": DUE_ROWS,
            "now": now.strftime(fmt),
            "past": (now - timedelta(minutes=1)).strftime(fmt),
            "later": (now + timedelta(hours=1)).strftime(fmt),
            "blank": BLANK,
        },
    )
    conn.commit()
    conn.execute("ANALYZE")
    conn.close()


def _fill_pg(url: str, rows: int, now: datetime) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            PG_FILL,
            {
                "rows": rows,
                "due": DUE_ROWS,
                "now": now,
                "past": now - timedelta(minutes=1),
                "later": now + timedelta(hours=1),
                "blank": BLANK,
            },
        )
        conn.execute("VACUUM ANALYZE items")


def _measure(url: str, samples: int) -> dict[str, Any]:
    from stopline.store import open_store

    store = open_store(url, migrate=False)
    release_sql = RELEASE.format(
        now=":now" if url.startswith("sqlite") else "%(now)s",
        id=":id" if url.startswith("sqlite") else "%(id)s",
    )
    times: list[float] = []
    for n in range(samples + WARMUP):
        now = datetime.now(UTC)
        t0 = time.perf_counter()
        item = store.claim("bench", now, 30.0, ["bench"])
        elapsed = time.perf_counter() - t0
        assert item is not None, "no due item to claim"
        if n >= WARMUP:
            times.append(elapsed)
        with store._write() as cur:  # type: ignore[attr-defined]
            cur.execute(release_sql, {"now": store._time(now), "id": item.id})  # type: ignore[attr-defined]
    store.close()
    ms = sorted(t * 1000 for t in times)
    return {
        "median_ms": round(statistics.median(ms), 3),
        "p95_ms": round(ms[int(len(ms) * 0.95) - 1], 3),
    }


def _row(store: str, backlog: int, samples: int, url: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "scenario": "stopline claim",
        "store": store,
        "backlog": backlog,
        "due": DUE_ROWS,
        "samples": samples,
        "error": None,
    }
    try:
        row.update(_measure(url, samples))
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"[:200]
    return row


def rows(cfg: BenchConfig) -> Iterator[dict[str, Any]]:
    from stopline.store import open_store

    samples = cfg.claim_samples
    for backlog in cfg.claim_backlogs:
        now = datetime.now(UTC)
        with temp_sqlite_dir(cfg, "stopline_claim") as folder:
            url = f"sqlite:///{folder / 'claim.db'}"
            open_store(url).close()
            _fill_sqlite(str(folder / "claim.db"), backlog, now)
            yield _row("sqlite sync=FULL", backlog, samples, url)
        with temp_database(cfg.pg_admin_dsn, "stopline_claim") as name:
            url = url_for(cfg.pg_admin_dsn, name)
            open_store(url).close()
            _fill_pg(url, backlog, now)
            yield _row("postgres", backlog, samples, url)
