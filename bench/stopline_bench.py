"""stopline itself: a no-op automation through the whole path, measured like the raw loop.

Each item takes five transitions after discovery (observe, propose -> approved, execute,
delivered, readback -> completed); each transition is one claim commit plus one outcome commit,
exactly the raw loop's two commits. Items are discovered before the clock starts.

With ``batch`` N > 1 each worker claims up to N items in one statement, runs up to N at once
and commits up to N decisions in one transaction (``--batch``): a claim and a commit are then
shared by several transitions. Each row also says how many bytes of rows one transition writes
(``row_bytes_per_transition``: the item row it rewrites plus its event row, as stored, plus
its share of the documents written apart, each once) and, on
SQLite, what the worker processes wrote to disk per transition (``disk_bytes_per_transition``,
from ``/proc/self/io``: WAL frames and checkpoints included).
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from common import (
    BenchConfig,
    Row,
    database_cpu,
    drain,
    make_row,
    per_op_ms,
    short_error,
    temp_database,
    temp_sqlite_dir,
    url_for,
)

TRANSITIONS_PER_ITEM = 5


def prepare(url: str, n: int) -> None:
    import noop_app

    from stopline.core.commands import Discover
    from stopline.core.decide import decide
    from stopline.core.step import Context
    from stopline.runtime.scheduler import Scheduler, new_item_id
    from stopline.store import open_store

    store = open_store(url)
    Scheduler(store, noop_app.app).register()
    policy = noop_app.noop.policy
    now = datetime.now(UTC)
    for i in range(n):
        d = decide(None, Discover(new_item_id(), "noop", f"k{i}", {}), Context(now, policy))
        store.insert(d)
    store.close()


def _written_bytes() -> int:
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _drain(
    url: str,
    n: int,
    start: mp.synchronize.Event,
    out: mp.Queue[tuple[int, int, float, float]],
    batch: int,
    lockstep: bool = False,
    ahead: int = 0,
) -> None:
    import noop_app

    from stopline.runtime.worker import Worker
    from stopline.store import open_store

    store = open_store(url, migrate=False)
    # the worker as `stopline run` makes it: leases renewed while a step runs
    worker = Worker(
        store, noop_app.app, concurrency=batch, batch=batch, lockstep=lockstep, ahead=ahead
    )
    start.wait()
    written = _written_bytes()
    cpu = time.process_time()  # this process, every thread: user + system
    drain(worker, store, "completed", n)
    worker.close()
    finished_at = time.monotonic()  # the work done; the process's exit is not timed
    out.put((worker.claims, _written_bytes() - written, time.process_time() - cpu, finished_at))
    store.close()


ROW_TABLES = ("items", "events", "documents")


def row_bytes(url: str) -> float | None:
    """Bytes of rows one transition writes: the mean stored size of an item row (rewritten
    at each transition) plus that of an event row, plus the documents written (each once, by
    digest: table ``documents``, when the schema has it) shared over every write of an item
    row, one per event row. PostgreSQL: ``pg_column_size`` of the row; SQLite: the bytes of
    every column's value."""
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    if url.startswith("sqlite:"):
        import sqlite3
        from urllib.parse import urlparse

        conn = sqlite3.connect(urlparse(url).path[1:])
        try:
            present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            for table in ROW_TABLES:
                rows = conn.execute(f"SELECT * FROM {table}").fetchall() if table in present else []
                totals[table] = sum(len(str(v).encode()) for r in rows for v in r if v is not None)
                counts[table] = len(rows)
        finally:
            conn.close()
    else:
        import psycopg

        with psycopg.connect(url) as pg:
            for table in ROW_TABLES:
                found = pg.execute(
                    f"SELECT to_regclass('{table}') IS NOT NULL AS present"
                ).fetchone()
                if not found or not found[0]:
                    totals[table], counts[table] = 0.0, 0
                    continue
                found = pg.execute(
                    f"SELECT sum(pg_column_size(t.*)), count(*) FROM {table} t"
                ).fetchone()
                totals[table] = float(found[0] or 0) if found else 0.0
                counts[table] = int(found[1] or 0) if found else 0
    writes = max(1, counts["events"])  # every write of an item row writes one event
    per_write = (
        totals["items"] / max(1, counts["items"])
        + totals["events"] / writes
        + totals["documents"] / writes
    )
    return round(per_write, 1)


def _scenario(batch: int, lockstep: bool, ahead: int = 0) -> str:
    if lockstep:
        return f"stopline lockstep batch {batch}" + (f" ahead {ahead}" if ahead else "")
    return "stopline" if batch == 1 else f"stopline batch {batch}"


def run_once(
    cfg: BenchConfig,
    url: str,
    store_label: str,
    workers: int,
    batch: int = 1,
    lockstep: bool = False,
    ahead: int = 0,
) -> Row:
    """One drain, as a row; a failure (a worker that died, the server gone) is an n/a row."""
    try:
        return _run_once(cfg, url, store_label, workers, batch, lockstep, ahead)
    except Exception as exc:
        return make_row(
            scenario=_scenario(batch, lockstep, ahead),
            store=store_label,
            workers=workers,
            items=cfg.items,
            ops=cfg.items * TRANSITIONS_PER_ITEM,
            unit="steps",
            seconds=None,
            error=short_error(exc) or type(exc).__name__,
            batch=batch,
            lockstep=lockstep,
            ahead=ahead,
        )


def _run_once(
    cfg: BenchConfig,
    url: str,
    store_label: str,
    workers: int,
    batch: int,
    lockstep: bool,
    ahead: int = 0,
) -> Row:
    n = cfg.items
    prepare(url, n)
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    out: mp.Queue[tuple[int, int, float, float]] = ctx.Queue()
    args = (url, n, start, out, batch, lockstep, ahead)
    procs = [ctx.Process(target=_drain, args=args) for _ in range(workers)]
    for p in procs:
        p.start()
    time.sleep(1.0)  # let every process import and connect before the clock starts
    pg = not url.startswith("sqlite:")
    db_cpu = database_cpu() if pg else None
    t0 = time.monotonic()
    start.set()
    deadline = t0 + cfg.scenario_timeout
    for p in procs:
        p.join(timeout=max(0.0, deadline - time.monotonic()))
    for p in procs:  # a worker that never finished (another one died, say) goes now
        if p.is_alive():
            p.kill()
            p.join(5)
    reports = [out.get(timeout=5) for _ in procs]
    db_after = database_cpu() if pg else None
    # timed as the raw loop and the peers are: to the moment the last worker's work is done,
    # read in the worker (the clock is the machine's), not to its process's exit
    seconds = max(r[3] for r in reports) - t0
    steps = sum(r[0] for r in reports)
    disk = sum(r[1] for r in reports)
    cpu = sum(r[2] for r in reports)
    from stopline.store import open_store

    store = open_store(url, migrate=False)
    done = len(store.list_items(state="completed", limit=n + 1))
    store.close()
    error = None if done == n else f"only {done} of {n} items completed"
    transitions = n * TRANSITIONS_PER_ITEM
    return make_row(
        scenario=_scenario(batch, lockstep, ahead),
        store=store_label,
        workers=workers,
        items=n,
        ops=n * TRANSITIONS_PER_ITEM,
        unit="steps",
        seconds=seconds,
        error=error,
        items_per_s=round(n / seconds, 1),
        claimed_steps=steps,
        batch=batch,
        lockstep=lockstep,
        ahead=ahead,
        row_bytes_per_transition=row_bytes(url),
        cpu_ms_per_op=round(1000 * cpu / transitions, 3),
        db_cpu_ms_per_op=per_op_ms(db_cpu, db_after, transitions),
        disk_bytes_per_transition=(
            round(disk / transitions, 1) if url.startswith("sqlite:") and disk else None
        ),
    )


def rows(cfg: BenchConfig) -> Iterator[Row]:
    """Batch 1 (one step at a time, as always) on every store and worker count; the larger
    batches on SQLite FULL and PostgreSQL, on step threads and in lockstep; and the largest
    batch in lockstep with as many items claimed ahead (``--ahead``)."""
    runs = [(b, False, 0) for b in cfg.batches] + [(b, True, 0) for b in cfg.batches if b > 1]
    if max(cfg.batches) > 1:
        runs.append((max(cfg.batches), True, max(cfg.batches)))
    for sync in cfg.sqlite_syncs:
        for b, lockstep, ahead in runs:
            if b > 1 and sync != "FULL":
                continue
            for w in cfg.workers:
                with temp_sqlite_dir(cfg, "stopline") as folder:
                    url = f"sqlite:///{folder / 'bench.db'}?synchronous={sync.lower()}"
                    yield run_once(cfg, url, f"sqlite sync={sync}", w, b, lockstep, ahead)
    for b, lockstep, ahead in runs:
        for w in cfg.workers:
            with temp_database(cfg.pg_admin_dsn, "stopline") as name:
                url = url_for(cfg.pg_admin_dsn, name)
                yield run_once(cfg, url, "postgres", w, b, lockstep, ahead)
