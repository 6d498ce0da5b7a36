"""The check before acting against the size of the registry.

Before each acting call a worker reads the item, its history and ledger entries, and asks
whether the registry (actors, tokens, policies, their chain and its ledger entries) changed
since it folded it (``Store.guard_reads``). That question is asked of every registry row, so
its cost grows with the registry; this measures how fast. For each store: 20 no-op items
driven to ``completed`` (six events each), then ``ACTORS`` actors added one by one through
the store (an actor and a registry event with its ledger entry each); at each size, after a
warm-up, ``SAMPLES`` checks of items in turn: the median wall time, and the client's and
(PostgreSQL) the database server's CPU per check.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from common import BenchConfig, database_cpu, temp_database, temp_sqlite_dir, url_for

ACTORS = (0, 100, 1000)
ITEMS = 20
SAMPLES = 200
WARMUP = 20


def _measure(store: Any, ids: list[str], pg: bool) -> dict[str, Any]:
    def check(n: int) -> None:
        store.guard_reads(ids[n % len(ids)], history=True, registry=True)

    for n in range(WARMUP):
        check(n)
    times = []
    server = database_cpu() if pg else None
    cpu = time.process_time()
    for n in range(SAMPLES):
        t0 = time.perf_counter()
        check(n)
        times.append(time.perf_counter() - t0)
    client_ms = (time.process_time() - cpu) * 1000 / SAMPLES
    after = database_cpu() if pg else None
    server_ms = None if server is None or after is None else (after - server) * 1000 / SAMPLES
    return {
        "median_ms": round(statistics.median(times) * 1000, 3),
        "client_cpu_ms": round(client_ms, 3),
        "db_cpu_ms": None if server_ms is None else round(server_ms, 3),
    }


def _rows(store_label: str, url: str) -> Iterator[dict[str, Any]]:
    import noop_app
    import stopline_bench

    from stopline.core.records import Actor
    from stopline.runtime.worker import Worker
    from stopline.store import open_store

    stopline_bench.prepare(url, ITEMS)
    store = open_store(url, migrate=False)
    try:
        worker = Worker(store, noop_app.app, concurrency=ITEMS, batch=ITEMS)
        while worker.tick():
            pass
        worker.close()
        ids = [item.id for item in store.list_items(automation="noop", limit=ITEMS)]
        added = 0
        for actors in ACTORS:
            while added < actors:
                actor = Actor(f"bench-{added}", frozenset({"approver"}))
                store.set_actor(actor, "add", {}, datetime.now(UTC))
                added += 1
            row: dict[str, Any] = {
                "scenario": "check before acting",
                "store": store_label,
                "actors": actors,
                "samples": SAMPLES,
                "error": None,
            }
            try:
                row.update(_measure(store, ids, url.startswith("postgresql")))
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {exc}"[:200]
            yield row
    finally:
        store.close()


def rows(cfg: BenchConfig) -> Iterator[dict[str, Any]]:
    with temp_sqlite_dir(cfg, "stopline_guard") as folder:
        yield from _rows("sqlite sync=FULL", f"sqlite:///{folder / 'guard.db'}")
    with temp_database(cfg.pg_admin_dsn, "stopline_guard") as name:
        yield from _rows("postgres", url_for(cfg.pg_admin_dsn, name))


def table_rows(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]], set[int]]:
    headers = ["scenario", "store", "actors", "samples", "median ms", "CPU ms", "DB CPU ms"]

    def ms(value: float | None, error: Any) -> str:
        return "n/a" if error else "-" if value is None else f"{value:.3f}"

    body = [
        [
            r["scenario"],
            r["store"],
            f"{r['actors']:,}",
            str(r["samples"]),
            ms(r.get("median_ms"), r.get("error")),
            ms(r.get("client_cpu_ms"), r.get("error")),
            ms(r.get("db_cpu_ms"), r.get("error")),
        ]
        for r in rows
    ]
    return headers, body, {2, 3, 4, 5, 6}


def ratio_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Per store: the median check with the most actors over the one with none."""
    out = []
    by_store: dict[str, dict[int, float | None]] = {}
    for r in rows:
        by_store.setdefault(r["store"], {})[r["actors"]] = (
            None if r.get("error") else r.get("median_ms")
        )
    for store, by in by_store.items():
        lo, hi = min(by), max(by)
        a, b = by[hi], by[lo]
        head = f"check before acting, {store}: {hi:,} actors ÷ {lo:,} = "
        out.append(head + ("n/a" if a is None or not b else f"{a / b:.2f}"))
    return out
