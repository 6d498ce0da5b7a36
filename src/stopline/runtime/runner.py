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

from .. import logs
from ..clock import utcnow
from ..store import open_store
from .automation import App
from .loader import load_app
from .notifier import NotifySettings, hosted
from .retrying import Reconnect, Stopped
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
    reconnect: Reconnect | None = None,
) -> int:
    """Claim and run steps until stopped (or, with ``once``, until nothing is due soon).

    Each pass (discovery when due, one step, or a wait for work) runs through ``reconnect``: a
    pass cut off by the database is run again from the top, and it reads what it needs afresh
    (a worker's commit reads back its own outcome, see ``Worker.commit``)."""
    reconnect = reconnect or Reconnect(stopping=lambda: stop.requested)
    steps = 0
    next_fire: datetime | None = None

    def one_pass() -> bool:
        """One pass of the loop; ``False`` when the loop is done."""
        nonlocal steps, next_fire
        if scheduler is not None and not once:
            now = clock()
            if next_fire is None or now >= next_fire:
                scheduler.tick()
                next_fire = scheduler.next_fire()
        claims = worker.claims
        if worker.tick():
            steps += worker.claims - claims
            return True
        now = clock()
        due = worker.store.next_due(list(worker.automations))
        wait = max_idle_wait
        if due is not None:
            wait = min(wait, max((due - now).total_seconds(), 0.0))
        if once and (due is None or (due - now).total_seconds() > linger):
            return False
        if scheduler is not None and not once and next_fire is not None:
            wait = min(wait, max((next_fire - now).total_seconds(), 0.0))
        worker.store.wait_for_work(max(wait, 0.01))
        return True

    try:
        while not stop.requested and reconnect.call("running the work loop", one_pass):
            pass
    except Stopped:
        pass
    finally:
        worker.beat.tick(clock(), force=True)  # the last heartbeat carries every step measured
        worker.close()  # the steps still in flight end (each commits or loses its claim)
    return steps


def _child(
    spec: str,
    url: str,
    once: bool,
    linger: float,
    queue: multiprocessing.Queue[tuple[int, int, list[str]]],
    concurrency: int = 1,
    batch: int = 1,
    ahead: int = 0,
    lockstep: bool = False,
) -> None:
    stop = _Stop()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    reconnect = Reconnect(stopping=lambda: stop.requested)
    try:
        store = reconnect.call("opening the database", open_store, url, migrate=False)
    except Stopped:
        queue.put((0, 0, []))
        return
    logs.configure()  # the format the parent chose, through the environment
    app, failures = watched(load_app(spec))
    worker = Worker(
        store, app, concurrency=concurrency, batch=batch, ahead=ahead, lockstep=lockstep
    )
    steps = work_loop(worker, once=once, linger=linger, stop=stop, reconnect=reconnect)
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
    concurrency: int = 1,
    batch: int = 1,
    ahead: int = 0,
    lockstep: bool = False,
) -> RunSummary:
    """Serve ``spec``'s automations. Extra workers are separate processes (``spec`` must then
    be an importable ``module:attribute`` or file path). With ``notify``, the webhook notifier
    runs beside them (with ``once``, it runs one last round before this returns). Each worker
    process runs up to ``concurrency`` items at once, claims and commits up to ``batch`` at
    once, and holds up to ``ahead`` more claimed, waiting for a free slot; with ``lockstep``,
    it runs its items as greenlets of one thread (see ``Worker``).

    Every store call, startup included, waits out a database that is away (see
    :mod:`stopline.runtime.retrying`); a stop signal during that wait ends the run."""
    with hosted(url, notify, flush=once):
        return _run(
            spec,
            url,
            once=once,
            workers=workers,
            linger=linger,
            concurrency=concurrency,
            batch=batch,
            ahead=ahead,
            lockstep=lockstep,
        )


def _run(
    spec: str | App,
    url: str,
    *,
    once: bool = False,
    workers: int = 1,
    linger: float = 5.0,
    concurrency: int = 1,
    batch: int = 1,
    ahead: int = 0,
    lockstep: bool = False,
) -> RunSummary:
    app, failures = watched(load_app(spec) if isinstance(spec, str) else spec)
    if workers > 1 and not isinstance(spec, str):
        raise ValueError("several worker processes need an importable APP spec")
    summary = RunSummary(workers=workers)
    stop = _Stop()
    previous = signal.signal(signal.SIGTERM, stop), signal.signal(signal.SIGINT, stop)
    reconnect = Reconnect(stopping=lambda: stop.requested)
    try:
        store = reconnect.call("opening the database", open_store, url)
    except BaseException as exc:  # stopped while waiting, or a schema this code cannot use
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
        if isinstance(exc, Stopped):
            return summary
        raise
    scheduler = Scheduler(store, app, reconnect=reconnect, failures=failures)
    ctx = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[tuple[int, int, list[str]]] = ctx.Queue()
    children = []
    try:
        scheduler.register()
        fired = scheduler.tick(force=once)
        summary.discovered = sum(f.new for f in fired)
        for _ in range(workers - 1):
            proc = ctx.Process(
                target=_child,
                args=(spec, url, once, linger, queue, concurrency, batch, ahead, lockstep),
                daemon=False,
            )
            proc.start()
            children.append(proc)
        worker = Worker(
            store, app, concurrency=concurrency, batch=batch, ahead=ahead, lockstep=lockstep
        )
        summary.steps = work_loop(
            worker, once=once, linger=linger, stop=stop, scheduler=scheduler, reconnect=reconnect
        )
        summary.transitions = worker.transitions
    except Stopped:
        pass
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
