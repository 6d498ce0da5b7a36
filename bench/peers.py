"""Peers: drain N no-op jobs with procrastinate, pgqueuer and DBOS, each in a fresh database.

For every peer and variant: create a database, install the peer's schema, enqueue N no-op
jobs, then start a worker and time it until all N jobs are recorded as finished. The
enqueue is not timed. Every run happens in its own spawned interpreter (``run_isolated``),
so one library's globals, threads or signal handlers cannot leak into another's run.

The worker is one process in every case; ``concurrency`` is how many jobs that process
may have in flight (procrastinate's ``concurrency``, pgqueuer's dequeue ``batch_size``
with its unbounded in-process dispatch, DBOS's queue ``worker_concurrency``).

A peer that fails is reported with ``rate=None`` and the error instead of stopping the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from importlib.metadata import version
from typing import Any

import psycopg
from common import (
    BenchConfig,
    Row,
    create_database,
    drop_database,
    dsn_for,
    make_row,
    run_isolated,
    short_error,
    unique_db_name,
    url_for,
)

CONCURRENT = 10  # the "concurrent" variant of every peer
ENQUEUE_CHUNK = 500


def _quiet_logs() -> None:
    logging.basicConfig(level=logging.WARNING)
    for name in ("procrastinate", "pgqueuer", "dbos", "psycopg", "psycopg.pool"):
        logging.getLogger(name).setLevel(logging.WARNING)


# --------------------------------------------------------------------------- procrastinate


def procrastinate_drain(dsn: str, jobs: int, concurrency: int, wait: float = 0.0) -> dict[str, Any]:
    """Enqueue ``jobs`` no-op tasks (each awaiting ``wait`` seconds), then time one worker
    (``wait=False``) draining them."""
    import procrastinate

    _quiet_logs()

    async def main() -> dict[str, Any]:
        connector = procrastinate.PsycopgConnector(
            conninfo=dsn, min_size=2, max_size=max(4, concurrency + 2)
        )
        app = procrastinate.App(connector=connector)

        @app.task(name="noop")
        async def noop() -> None:
            if wait:
                await asyncio.sleep(wait)

        async with app.open_async():
            await app.schema_manager.apply_schema_async()
            left = jobs
            while left:
                n = min(ENQUEUE_CHUNK, left)
                await noop.batch_defer_async(*({} for _ in range(n)))
                left -= n
            t0 = time.monotonic()
            # wait=False: the worker stops as soon as it finds no job left.
            await app.run_worker_async(
                concurrency=concurrency,
                wait=False,
                install_signal_handlers=False,
                listen_notify=False,
                delete_jobs="never",
            )
            elapsed = time.monotonic() - t0
        with psycopg.connect(dsn) as conn:
            done = conn.execute(
                "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"
            ).fetchone()[0]
        return {"seconds": elapsed, "done": done}

    return asyncio.run(main())


# --------------------------------------------------------------------------- pgqueuer


def pgqueuer_drain(
    dsn: str, url: str, jobs: int, batch_size: int, driver: str, wait: float = 0.0
) -> dict[str, Any]:
    """Enqueue ``jobs`` no-op jobs (each awaiting ``wait`` seconds), then time a QueueManager
    in drain mode.

    ``driver``: "asyncpg" (pgqueuer's primary driver) or "psycopg" (PsycopgDriver on one
    async connection in autocommit mode).
    """

    from pgqueuer import Job, Queries, QueueManager
    from pgqueuer.domain.types import QueueExecutionMode

    _quiet_logs()

    async def connect() -> tuple[Any, Any]:
        if driver == "asyncpg":
            import asyncpg
            from pgqueuer.db import AsyncpgDriver

            conn = await asyncpg.connect(url)
            return conn, AsyncpgDriver(conn)
        from pgqueuer.db import PsycopgDriver

        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        return conn, PsycopgDriver(conn)

    async def main() -> dict[str, Any]:
        setup, drv = await connect()
        try:
            queries = Queries(drv)
            await queries.install()
            left = jobs
            while left:
                n = min(ENQUEUE_CHUNK, left)
                await queries.enqueue(["noop"] * n, [None] * n, [0] * n)
                left -= n
        finally:
            await setup.close()

        conn, drv = await connect()
        try:
            qm = QueueManager(Queries(drv))

            # With a wait (the IO-bound path), at most batch_size jobs run at once: without the
            # entrypoint's limit pgqueuer starts every dequeued job at once, unbounded.
            @qm.entrypoint("noop", concurrency_limit=batch_size if wait else 0)
            async def noop(job: Job) -> None:
                if wait:
                    await asyncio.sleep(wait)

            t0 = time.monotonic()
            await qm.run(batch_size=batch_size, mode=QueueExecutionMode.drain)
            elapsed = time.monotonic() - t0
        finally:
            await conn.close()

        with psycopg.connect(dsn) as c:
            left_rows = c.execute("SELECT count(*) FROM pgqueuer").fetchone()[0]
            done = c.execute(
                "SELECT count(*) FROM pgqueuer_log WHERE status = 'successful'"
            ).fetchone()[0]
        return {"seconds": elapsed, "done": done, "left_in_queue": left_rows}

    return asyncio.run(main())


# --------------------------------------------------------------------------- DBOS

DBOS_QUEUE = "bench_noop"
DBOS_APP_VERSION = "bench-1"


def _dbos_setup(url: str, wait: float = 0.0) -> Any:
    """Configure DBOS and register the no-op workflow (one no-op step, which sleeps ``wait``
    seconds). Not launched."""
    from dbos import DBOS

    _quiet_logs()
    DBOS(
        config={
            "name": "bench",
            "system_database_url": url,
            "application_version": DBOS_APP_VERSION,
            "log_level": "WARNING",
        }
    )

    @DBOS.step(name="noop_step")
    def noop_step() -> None:
        if wait:
            time.sleep(wait)

    @DBOS.workflow(name="noop_workflow")
    def noop_workflow() -> None:
        noop_step()

    return noop_workflow


def dbos_enqueue(url: str, jobs: int, concurrency: int, polling: float) -> dict[str, Any]:
    """Phase 1 (own process, listening to no queue): register the queue, enqueue N."""
    from dbos import DBOS

    workflow = _dbos_setup(url)
    DBOS.listen_queues([])
    DBOS.launch()
    try:
        q = DBOS.register_queue(
            DBOS_QUEUE, worker_concurrency=concurrency, polling_interval_sec=polling
        )
        t0 = time.monotonic()
        for _ in range(jobs):
            q.enqueue(workflow)
        return {"enqueue_seconds": time.monotonic() - t0}
    finally:
        DBOS.destroy()


def dbos_drain(url: str, dsn: str, jobs: int, wait: float = 0.0) -> dict[str, Any]:
    """Phase 2 (fresh process): launch DBOS, time until the N workflows are SUCCESS."""
    from dbos import DBOS

    _dbos_setup(url, wait)
    count_sql = (
        "SELECT count(*) FROM dbos.workflow_status WHERE queue_name = %s AND status = 'SUCCESS'"
    )
    with psycopg.connect(dsn, autocommit=True) as watch:
        DBOS.launch()
        try:
            t0 = time.monotonic()
            deadline = t0 + 600
            done = 0
            while time.monotonic() < deadline:
                done = watch.execute(count_sql, (DBOS_QUEUE,)).fetchone()[0]
                if done >= jobs:
                    break
                time.sleep(0.005)
            elapsed = time.monotonic() - t0
        finally:
            DBOS.destroy(workflow_completion_timeout_sec=5)
    return {"seconds": elapsed, "done": done}


# --------------------------------------------------------------------------- rows


def _peer_row(
    cfg: BenchConfig,
    *,
    scenario: str,
    concurrency: int,
    jobs: int,
    run: Callable[[str, str], dict[str, Any]],
    **details: Any,
) -> Row:
    """Fresh database -> run(dsn, url) -> row. Errors become an n/a row."""
    base = {
        "scenario": scenario,
        "store": "postgres",
        "workers": 1,
        "concurrency": concurrency,
        "items": jobs,
        "ops": jobs,
        "unit": "jobs",
    }
    name = unique_db_name(scenario.split()[0])
    try:
        create_database(cfg.pg_admin_dsn, name)
    except Exception as exc:
        return make_row(**base, seconds=None, error=short_error(exc), error_full=repr(exc))
    try:
        res = run(dsn_for(cfg.pg_admin_dsn, name), url_for(cfg.pg_admin_dsn, name))
    except Exception as exc:
        return make_row(
            **base, seconds=None, error=short_error(exc), error_full=str(exc), **details
        )
    finally:
        with contextlib.suppress(Exception):
            drop_database(cfg.pg_admin_dsn, name)
    seconds = res.pop("seconds")
    done = res.get("done")
    error = None if done == jobs else f"only {done} of {jobs} jobs finished"
    return make_row(**base, seconds=seconds, error=error, **details, **res)


def _pkg(name: str) -> str:
    try:
        return version(name)
    except Exception:
        return "not installed"


def rows(cfg: BenchConfig) -> Iterator[Row]:
    t = cfg.scenario_timeout
    n = cfg.jobs

    for c in (1, CONCURRENT):
        yield _peer_row(
            cfg,
            scenario="procrastinate",
            concurrency=c,
            jobs=n,
            run=lambda dsn, url, c=c: run_isolated(procrastinate_drain, (dsn, n, c), t),
            version=_pkg("procrastinate"),
            variant=f"PsycopgConnector, concurrency={c}, listen_notify=False",
        )

    # PsycopgDriver waits on notifies(timeout=1.0) while holding the connection, which
    # shows up as ~1 s stalls (one early, several at shutdown): kept as a separate row.
    pgq = [("asyncpg", 1), ("asyncpg", 10), ("psycopg", 10)]
    for drv, b in pgq:
        yield _peer_row(
            cfg,
            scenario="pgqueuer" if drv == "asyncpg" else "pgqueuer (psycopg driver)",
            concurrency=b,
            jobs=n,
            run=lambda dsn, url, b=b, drv=drv: run_isolated(
                pgqueuer_drain, (dsn, url, n, b, drv), t
            ),
            version=_pkg("pgqueuer"),
            variant=f"{drv} driver, batch_size={b}" + (" (default)" if b == 10 else ""),
            durability="durable (default)",
        )

    # worker_concurrency=1: one workflow in flight; each poll claims at most one, so the
    # poll interval (10 ms here, 1 s by default) bounds the rate (~50/s): fewer jobs there
    # keep the run short. worker_concurrency=10: up to 10 claimed per poll.
    for c, polling, jobs in ((1, 0.01, min(n, max(100, n // 4))), (CONCURRENT, 0.01, n)):

        def run_dbos(
            dsn: str, url: str, c: int = c, polling: float = polling, jobs: int = jobs
        ) -> dict[str, Any]:
            enq = run_isolated(dbos_enqueue, (url, jobs, c, polling), t)
            res = run_isolated(dbos_drain, (url, dsn, jobs), t)
            return {**res, **enq}

        yield _peer_row(
            cfg,
            scenario="dbos",
            concurrency=c,
            jobs=jobs,
            run=run_dbos,
            version=_pkg("dbos"),
            variant=(
                f"queue worker_concurrency={c}, polling_interval_sec={polling}, "
                "workflow with one no-op step"
            ),
        )


def io_rows(cfg: BenchConfig) -> Iterator[Row]:
    """The IO-bound path beside stopline's (``io_bench.py``): N jobs that each wait 50 ms,
    one worker process at concurrency 1 / 10 / 50; each row with its ratio to C / 50 ms."""
    from io_bench import CONCURRENCIES, WAIT, items_for

    t = cfg.scenario_timeout
    for c in CONCURRENCIES:
        n = items_for(cfg, c)
        made = [
            _peer_row(
                cfg,
                scenario="io 50ms: procrastinate",
                concurrency=c,
                jobs=n,
                run=lambda dsn, url, c=c, n=n: run_isolated(
                    procrastinate_drain, (dsn, n, c, WAIT), t
                ),
                version=_pkg("procrastinate"),
                variant=f"PsycopgConnector, concurrency={c}, async task awaiting 50 ms",
            ),
            _peer_row(
                cfg,
                scenario="io 50ms: pgqueuer",
                concurrency=c,
                jobs=n,
                run=lambda dsn, url, c=c, n=n: run_isolated(
                    pgqueuer_drain, (dsn, url, n, c, "asyncpg", WAIT), t
                ),
                version=_pkg("pgqueuer"),
                variant=(
                    f"asyncpg driver, batch_size={c}, entrypoint concurrency_limit={c},"
                    " async entrypoint awaiting 50 ms"
                ),
            ),
        ]

        def run_dbos(dsn: str, url: str, c: int = c, n: int = n) -> dict[str, Any]:
            enq = run_isolated(dbos_enqueue, (url, n, c, 0.01), t)
            res = run_isolated(dbos_drain, (url, dsn, n, WAIT), t)
            return {**res, **enq}

        made.append(
            _peer_row(
                cfg,
                scenario="io 50ms: dbos",
                concurrency=c,
                jobs=n,
                run=run_dbos,
                version=_pkg("dbos"),
                variant=f"queue worker_concurrency={c}, polling 10 ms, a step sleeping 50 ms",
            )
        )
        for row in made:
            ideal = c / WAIT
            rate = row.get("rate")
            row["details"]["ideal_rate"] = ideal
            row["details"]["ideal_ratio"] = None if rate is None else round(rate / ideal, 3)
            yield row
