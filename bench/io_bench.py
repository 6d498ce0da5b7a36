"""The IO-bound path: items whose one hook waits 50 ms, at concurrency 1 / 10 / 50.

stopline: one worker process with ``concurrency=C`` and ``batch=C`` drains N items of
``io_app`` (observe waits 50 ms, propose stops the item for review: two transitions per item).
The peers drain N jobs that each wait 50 ms (``peers.py`` with ``wait``), one worker process
at the same concurrency. The ideal is C / 50 ms items per second; every row carries its ratio
to that ideal (``ideal_ratio``). At concurrency 1 fewer items keep the run short
(``cfg.io_items_serial``). stopline runs again with async hooks and ``ahead=max(1, C // 4)``
(``stopline run --ahead``): that many items claimed beyond the C running, so that a slot that
frees starts its next item without waiting for a claim; and in lockstep (``--lockstep``), with
no items claimed ahead and with as many as the async run: there at most C hooks run at once,
and the items ahead queue for a place.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Iterator
from datetime import UTC, datetime

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

WAIT = 0.05
CONCURRENCIES = (1, 10, 50)


def items_for(cfg: BenchConfig, concurrency: int) -> int:
    return cfg.io_items_serial if concurrency == 1 else cfg.io_items


def _prepare(url: str, n: int) -> None:
    import io_app

    from stopline.core.commands import Discover
    from stopline.core.decide import decide
    from stopline.core.step import Context
    from stopline.runtime.scheduler import Scheduler, new_item_id
    from stopline.store import open_store

    store = open_store(url)
    Scheduler(store, io_app.app_async).register()
    policy = io_app.app_async.automations[0].policy
    now = datetime.now(UTC)
    for i in range(n):
        d = decide(None, Discover(new_item_id(), "io", f"k{i}", {}), Context(now, policy))
        store.insert(d)
    store.close()


def _drain(
    url: str,
    kind: str,
    n: int,
    concurrency: int,
    start: mp.synchronize.Event,
    out: mp.Queue[tuple[int, float, float]],
    ahead: int = 0,
) -> None:
    import io_app

    from stopline.runtime.worker import Worker
    from stopline.store import open_store

    app = io_app.app_thread if kind == "thread" else io_app.app_async
    store = open_store(url, migrate=False)
    lockstep = kind == "lockstep"  # async hooks, the items as greenlets of one thread
    worker = Worker(
        store, app, concurrency=concurrency, batch=concurrency, ahead=ahead, lockstep=lockstep
    )
    start.wait()
    cpu = time.process_time()  # this process, every thread: user + system
    drain(worker, store, "ready_for_review", n)
    worker.close()
    finished_at = time.monotonic()  # the work done; the process's exit is not timed
    out.put((worker.transitions, finished_at, time.process_time() - cpu))
    store.close()


def _scenario(kind: str, ahead: int) -> str:
    hooks = "lockstep, async" if kind == "lockstep" else kind
    return f"io 50ms: stopline ({hooks} hooks{f', ahead {ahead}' if ahead else ''})"


def run_once(
    cfg: BenchConfig, url: str, label: str, kind: str, concurrency: int, ahead: int = 0
) -> Row:
    """One drain, as a row; a failure (a worker that died, the server gone) is an n/a row."""
    try:
        return _run_once(cfg, url, label, kind, concurrency, ahead)
    except Exception as exc:
        n = items_for(cfg, concurrency)
        return make_row(
            scenario=_scenario(kind, ahead),
            store=label,
            workers=1,
            concurrency=concurrency,
            items=n,
            ops=n,
            unit="items",
            seconds=None,
            error=short_error(exc) or type(exc).__name__,
        )


def _run_once(
    cfg: BenchConfig, url: str, label: str, kind: str, concurrency: int, ahead: int
) -> Row:
    n = items_for(cfg, concurrency)
    _prepare(url, n)
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    out: mp.Queue[tuple[int, float, float]] = ctx.Queue()
    proc = ctx.Process(target=_drain, args=(url, kind, n, concurrency, start, out, ahead))
    proc.start()
    time.sleep(1.0)  # let the process import and connect before the clock starts
    pg = not url.startswith("sqlite:")
    db_cpu = database_cpu() if pg else None
    t0 = time.monotonic()
    start.set()
    proc.join(timeout=cfg.scenario_timeout)
    seconds = time.monotonic() - t0
    db_after = database_cpu() if pg else None
    if proc.is_alive():
        proc.kill()
        proc.join(5)
    transitions, cpu = 0, None
    if proc.exitcode == 0:
        # timed as the peers are: to the moment the work is done, in the worker process
        transitions, finished_at, cpu = out.get(timeout=5)
        seconds = finished_at - t0
    from stopline.store import open_store

    store = open_store(url, migrate=False)
    done = len(store.list_items(state="ready_for_review", limit=n + 1))
    store.close()
    error = None if done == n else f"only {done} of {n} items reviewed"
    ideal = concurrency / WAIT
    return make_row(
        scenario=_scenario(kind, ahead),
        store=label,
        workers=1,
        concurrency=concurrency,
        items=n,
        ops=n,
        unit="items",
        seconds=seconds,
        error=error,
        ideal_rate=ideal,
        ideal_ratio=round(n / seconds / ideal, 3) if seconds else None,
        batch=concurrency,
        ahead=ahead,
        transitions=transitions,
        cpu_ms_per_op=None if cpu is None else round(1000 * cpu / n, 3),
        db_cpu_ms_per_op=per_op_ms(db_cpu, db_after, n),
    )


def rows(cfg: BenchConfig) -> Iterator[Row]:
    for c in CONCURRENCIES:
        with temp_database(cfg.pg_admin_dsn, "io") as name:
            yield run_once(cfg, url_for(cfg.pg_admin_dsn, name), "postgres", "thread", c)
        ahead = max(1, c // 4)
        for kind, claimed_ahead in (("async", 0), ("async", ahead), ("lockstep", 0)):
            yield from _on_both_stores(cfg, kind, c, claimed_ahead)
        yield from _on_both_stores(cfg, "lockstep", c, ahead)


def _on_both_stores(cfg: BenchConfig, kind: str, concurrency: int, ahead: int) -> Iterator[Row]:
    with temp_database(cfg.pg_admin_dsn, "io") as name:
        url = url_for(cfg.pg_admin_dsn, name)
        yield run_once(cfg, url, "postgres", kind, concurrency, ahead)
    with temp_sqlite_dir(cfg, "io") as folder:
        url = f"sqlite:///{folder / 'bench.db'}"
        yield run_once(cfg, url, "sqlite sync=FULL", kind, concurrency, ahead)
