"""An app for ``stopline run --workers 2``, whose worker processes take part for certain.

Automation ``ops`` discovers ``a``, ``b``, ``c`` and ``d``. The first observe hook the main
process runs waits until a worker process has begun one (it leaves ``child-<pid>`` in
``STOPLINE_TEST_ROOT``, holding the item's key), so the main process can never take every item
itself. With ``STOPLINE_TEST_HOLD=release`` a worker process's observe hook then waits for the
file ``release``; with ``STOPLINE_TEST_HOLD=fail`` its propose hook raises (a failure of the
app's code, counted in the process that ran it). With ``STOPLINE_TEST_HOLD=pair`` (run with
``--concurrency 2``) every observe hook waits until a worker process has two hooks running
at once: the main process holds two items at most, so the other two are the worker
process's, and it must run them together."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import Evidence, ReportForReview

ROOT = Path(os.environ.get("STOPLINE_TEST_ROOT", "."))
HOLD = os.environ.get("STOPLINE_TEST_HOLD", "")


def in_worker_process() -> bool:
    return multiprocessing.parent_process() is not None


def _until(found: object, what: str) -> None:
    deadline = time.monotonic() + 120
    while not found():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {what} within 120 s")
        time.sleep(0.02)


def observe(ctx: HookContext) -> Evidence:
    assert ctx.item is not None
    if in_worker_process():
        partial = ROOT / f"partial-{ctx.item.key}"
        partial.write_text(ctx.item.key)
        partial.replace(ROOT / f"child-{os.getpid()}-{ctx.item.key}")  # whole or not there
        if HOLD == "release":
            _until((ROOT / "release").exists, "release")
    if HOLD == "pair":
        _until(lambda: len(list(ROOT.glob("child-*"))) >= 2, "two hooks of a worker process")
    else:
        _until(lambda: any(ROOT.glob("child-*")), "a worker process's hook")
    return Evidence({"pid": os.getpid()})


def propose(ctx: HookContext) -> ReportForReview:
    if HOLD == "fail" and in_worker_process():
        raise ValueError("raised in a worker process")
    return ReportForReview({"summary": "fine"})


app = App(
    [Automation("ops", lambda ctx: ["a", "b", "c", "d"], observe, propose, hook_timeout=300.0)]
)
