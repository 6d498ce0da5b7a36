"""Where the IO-bound path's time goes at high concurrency: how full the hook places are.

A lockstep worker at concurrency C runs at most C hooks at once, each holding one of C places
(``runtime/hook_threads.Places``). An item of ``io_app`` holds a place twice: its ``observe``
hook (an ``await asyncio.sleep(0.05)``) and its ``propose`` hook (returns at once). So the
rate is at most

    places held on average / place time per item

and the ideal C / 50 ms needs every place held all the time, each item's place time 50 ms.
This script drains N items at concurrency C in lockstep with async hooks (as ``io_bench``
does) and reads both factors off the places themselves: every time a place is taken or let
go, the time and the number held are recorded (two clock readings per hook), and the area
under that curve is the place time of the run. The number held is read just before the
places' own lock is taken, so two threads changing it at the same moment may each count from
the same value: the area is right to within such coincidences, a small share of the hooks.
It prints, for each store and each ``ahead``: the rate against the ideal, the places held on
average (of C), the place time per item, and the worker's CPU per item.

    bench/.venv/bin/python bench/io_places.py                      # C = 50, ahead 12 and 50
    bench/.venv/bin/python bench/io_places.py --concurrency 10 --ahead 2 --items 1000

A run with ``--no-wait`` drains the same items with an ``observe`` hook that returns at once:
the most the process's CPU allows, with nothing to wait for.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import threading
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from common import BenchConfig, temp_database, temp_sqlite_dir, url_for  # noqa: E402

WAIT = 0.05


class PlaceLog:
    """The area under ``held`` over time, kept by wrapping ``Places.enter`` and ``leave``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.area = 0.0  # place-seconds
        self.last: float | None = None
        self.first: float | None = None

    def mark(self, held: int) -> None:
        """Called just before ``held`` changes: the area up to now, at the old value."""
        now = time.monotonic()
        with self.lock:
            if self.last is not None:
                self.area += held * (now - self.last)
            else:
                self.first = now
            self.last = now


def _child(
    url: str, n: int, concurrency: int, ahead: int, no_wait: bool, switch: float, out: Any
) -> None:
    if switch:
        sys.setswitchinterval(switch)
    import io_app
    from common import drain

    from stopline import App, Automation, Evidence
    from stopline.runtime import hook_threads
    from stopline.runtime.worker import Worker
    from stopline.store import open_store

    log = PlaceLog()
    enter, leave = hook_threads.Places.enter, hook_threads.Places.leave

    def logged_enter(self: Any, start: Any) -> None:
        if self.held < self.size:  # takes a place now (else it queues: no change)
            log.mark(self.held)
        enter(self, start)

    def logged_leave(self: Any) -> None:
        if not self.queued:  # a place let go (else it passes to the first queued)
            log.mark(self.held)
        leave(self)

    hook_threads.Places.enter = logged_enter  # type: ignore[method-assign]
    hook_threads.Places.leave = logged_leave  # type: ignore[method-assign]

    app = io_app.app_async
    if no_wait:

        async def observe_now(ctx):  # type: ignore[no-untyped-def]
            return Evidence({"ok": True})

        app = App([Automation("io", io_app.discover, observe_now, io_app.propose, every=3600)])
    store = open_store(url, migrate=False)
    worker = Worker(
        store, app, concurrency=concurrency, batch=concurrency, ahead=ahead, lockstep=True
    )
    cpu, t0 = time.process_time(), time.monotonic()
    drain(worker, store, "ready_for_review", n)
    seconds, cpu = time.monotonic() - t0, time.process_time() - cpu
    worker.close()
    store.close()
    span = (log.last or 0.0) - (log.first or 0.0)
    out.put((seconds, cpu, log.area, span))


def measure(
    url: str, n: int, concurrency: int, ahead: int, no_wait: bool, switch: float = 0.0
) -> dict[str, float]:
    import io_bench

    io_bench._prepare(url, n)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_child, args=(url, n, concurrency, ahead, no_wait, switch, out))
    proc.start()
    seconds, cpu, area, span = out.get(timeout=600)
    proc.join(30)
    return {
        "rate": n / seconds,
        "ideal": n / seconds / (concurrency / WAIT),
        "held": area / span if span else 0.0,
        "place_ms_per_item": 1000 * area / n,
        "cpu_ms_per_item": 1000 * cpu / n,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--concurrency", type=int, default=50)
    p.add_argument("--ahead", default="12,50", help="comma-separated items claimed ahead")
    p.add_argument("--items", type=int, default=2000)
    p.add_argument("--stores", default="sqlite,postgres")
    p.add_argument("--no-wait", action="store_true", help="an observe hook that returns at once")
    p.add_argument(
        "--switch-interval",
        type=float,
        default=0.0,
        help="the worker's sys.setswitchinterval (seconds; default: Python's, 0.005)",
    )
    p.add_argument("--pg-dsn", default=BenchConfig().pg_admin_dsn)
    args = p.parse_args(argv)
    cfg = BenchConfig.quick_config()
    c = args.concurrency
    print(
        f"lockstep, async hooks, C = {c}, {args.items} items"
        f"{', observe returns at once' if args.no_wait else ', observe waits 50 ms'}"
    )
    print(
        f"{'store':10} {'ahead':>5} {'items/s':>8} {'vs ideal':>8} "
        f"{'places held':>11} {'place ms/item':>13} {'CPU ms/item':>11}"
    )
    for store in args.stores.split(","):
        for ahead in (int(a) for a in args.ahead.split(",")):
            if store == "postgres":
                with temp_database(args.pg_dsn, "places") as name:
                    m = measure(
                        url_for(args.pg_dsn, name),
                        args.items,
                        c,
                        ahead,
                        args.no_wait,
                        args.switch_interval,
                    )
            else:
                with temp_sqlite_dir(cfg, "places") as folder:
                    url = f"sqlite:///{folder / 'bench.db'}"
                    m = measure(url, args.items, c, ahead, args.no_wait, args.switch_interval)
            print(
                f"{store:10} {ahead:>5} {m['rate']:>8,.0f} {m['ideal']:>8.0%} "
                f"{m['held']:>7.1f}/{c:<3} {m['place_ms_per_item']:>13.1f} "
                f"{m['cpu_ms_per_item']:>11.3f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
