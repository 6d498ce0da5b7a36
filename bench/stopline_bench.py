"""stopline itself: a no-op automation through the whole path, measured like the raw loop.

Each item takes five transitions after discovery (observe, propose -> approved, execute,
delivered, readback -> completed); each transition is one claim commit plus one outcome commit,
exactly the raw loop's two commits. Items are discovered before the clock starts.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Iterator
from datetime import UTC, datetime

from common import BenchConfig, Row, make_row, temp_database, temp_sqlite_dir, url_for

TRANSITIONS_PER_ITEM = 5


def _prepare(url: str, n: int) -> None:
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


def _drain(url: str, n: int, start: mp.synchronize.Event, out: mp.Queue[int]) -> None:
    import noop_app

    from stopline.runtime.worker import Worker
    from stopline.store import open_store

    store = open_store(url, migrate=False)
    worker = Worker(store, noop_app.app, renew=False)
    start.wait()
    steps = 0
    while True:
        if worker.tick():
            steps += 1
            continue
        if len(store.list_items(state="completed", limit=n + 1)) >= n:
            break
        time.sleep(0.001)
    out.put(steps)
    store.close()


def run_once(cfg: BenchConfig, url: str, store_label: str, workers: int) -> Row:
    n = cfg.items
    _prepare(url, n)
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    out: mp.Queue[int] = ctx.Queue()
    procs = [ctx.Process(target=_drain, args=(url, n, start, out)) for _ in range(workers)]
    for p in procs:
        p.start()
    time.sleep(1.0)  # let every process import and connect before the clock starts
    t0 = time.perf_counter()
    start.set()
    for p in procs:
        p.join(timeout=cfg.scenario_timeout)
    seconds = time.perf_counter() - t0
    steps = sum(out.get(timeout=5) for _ in procs)
    from stopline.store import open_store

    store = open_store(url, migrate=False)
    done = len(store.list_items(state="completed", limit=n + 1))
    store.close()
    error = None if done == n else f"only {done} of {n} items completed"
    return make_row(
        scenario="stopline",
        store=store_label,
        workers=workers,
        items=n,
        ops=n * TRANSITIONS_PER_ITEM,
        unit="steps",
        seconds=seconds,
        error=error,
        items_per_s=round(n / seconds, 1),
        claimed_steps=steps,
    )


def rows(cfg: BenchConfig) -> Iterator[Row]:
    for sync in cfg.sqlite_syncs:
        for w in cfg.workers:
            with temp_sqlite_dir(cfg, "stopline") as folder:
                url = f"sqlite:///{folder / 'bench.db'}?synchronous={sync.lower()}"
                yield run_once(cfg, url, f"sqlite sync={sync}", w)
    for w in cfg.workers:
        with temp_database(cfg.pg_admin_dsn, "stopline") as name:
            yield run_once(cfg, url_for(cfg.pg_admin_dsn, name), "postgres", w)
