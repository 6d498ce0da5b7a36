"""``stopline run``: the scheduler and workers, in one process or several."""

from __future__ import annotations

import logging
import multiprocessing
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from types import FrameType

from ..controller import utcnow
from ..store import open_store
from ..store.errors import connection_errors
from .automation import App
from .loader import load_app
from .notifier import NotifySettings, hosted
from .scheduler import Scheduler
from .watch import watched
from .worker import Worker

log = logging.getLogger("stopline.run")


@dataclass
class RunSummary:
    steps: int = 0  # claims taken (one claim may carry several transitions)
    transitions: int = 0  # applied decisions written by the workers
    discovered: int = 0
    workers: int = 1
    extra: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)  # the app's own code failed (watch.py)


class _Stop:
    def __init__(self) -> None:
        self.requested = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True


def work_loop(
    worker: Worker,
    *,
    once: bool,
    linger: float,
    stop: _Stop,
    scheduler: Scheduler | None = None,
    clock: Callable[[], datetime] = utcnow,
    max_idle_wait: float = 0.5,
) -> int:
    """Claim and run steps until stopped (or, with ``once``, until nothing is due soon)."""
    steps = 0
    next_fire: datetime | None = None
    backoff = 0.0
    transient = connection_errors()
    while not stop.requested:
        try:
            if scheduler is not None and not once:
                now = clock()
                if next_fire is None or now >= next_fire:
                    scheduler.tick()
                    next_fire = scheduler.next_fire()
            if worker.tick():
                steps += 1
                backoff = 0.0
                continue
            now = clock()
            due = worker.store.next_due(list(worker.automations))
            wait = max_idle_wait
            if due is not None:
                wait = min(wait, max((due - now).total_seconds(), 0.0))
            if once and (due is None or (due - now).total_seconds() > linger):
                break
            if scheduler is not None and not once and next_fire is not None:
                wait = min(wait, max((next_fire - now).total_seconds(), 0.0))
            worker.store.wait_for_work(max(wait, 0.01))
        except transient as exc:  # the database went away: wait, reconnect, carry on
            backoff = min(max(backoff * 2, 0.1), 5.0)
            log.warning("database unavailable (%s); retrying in %.1f s", exc, backoff)
            time.sleep(backoff)
    return steps


def _child(
    spec: str,
    url: str,
    once: bool,
    linger: float,
    queue: multiprocessing.Queue[tuple[int, int, list[str]]],
) -> None:
    stop = _Stop()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    store = open_store(url, migrate=False)
    app, failures = watched(load_app(spec))
    worker = Worker(store, app)
    steps = work_loop(worker, once=once, linger=linger, stop=stop)
    queue.put((steps, worker.transitions, failures.lines))
    store.close()


def run(
    spec: str | App,
    url: str,
    *,
    once: bool = False,
    workers: int = 1,
    linger: float = 5.0,
    notify: NotifySettings | None = None,
) -> RunSummary:
    """Serve ``spec``'s automations. Extra workers are separate processes (``spec`` must then
    be an importable ``module:attribute`` or file path). With ``notify``, the webhook notifier
    runs beside them (with ``once``, it runs one last round before this returns)."""
    with hosted(url, notify, flush=once):
        return _run(spec, url, once=once, workers=workers, linger=linger)


def _run(
    spec: str | App,
    url: str,
    *,
    once: bool = False,
    workers: int = 1,
    linger: float = 5.0,
) -> RunSummary:
    app, failures = watched(load_app(spec) if isinstance(spec, str) else spec)
    store = open_store(url)
    scheduler = Scheduler(store, app)
    try:
        scheduler.register()
    except BaseException:  # e.g. an actor to seed that looks like a registered one
        store.close()
        raise
    summary = RunSummary(workers=workers)
    fired = scheduler.tick(force=once)
    summary.discovered = sum(f.new for f in fired)
    stop = _Stop()
    previous = signal.signal(signal.SIGTERM, stop), signal.signal(signal.SIGINT, stop)
    ctx = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[tuple[int, int, list[str]]] = ctx.Queue()
    children = []
    if workers > 1:
        if not isinstance(spec, str):
            raise ValueError("several worker processes need an importable APP spec")
        for _ in range(workers - 1):
            proc = ctx.Process(target=_child, args=(spec, url, once, linger, queue), daemon=False)
            proc.start()
            children.append(proc)
    worker = Worker(store, app)
    try:
        summary.steps = work_loop(worker, once=once, linger=linger, stop=stop, scheduler=scheduler)
        summary.transitions = worker.transitions
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
        for proc in children:
            if stop.requested and proc.pid is not None and proc.is_alive():
                proc.terminate()
        deadline = time.monotonic() + 60
        for proc in children:
            proc.join(timeout=max(0.0, deadline - time.monotonic()))
        summary.failures = list(failures.lines)
        while not queue.empty():
            steps, transitions, lines = queue.get_nowait()
            summary.steps += steps
            summary.transitions += transitions
            summary.failures += lines
        store.close()
    return summary
