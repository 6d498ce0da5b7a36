"""An IO-bound automation: the observe hook waits 50 ms (a stand-in for one API call), the
propose hook reports at once, so each item is one wait and two transitions, and stops in
``ready_for_review``. ``app_async`` waits with ``await asyncio.sleep`` (the worker's event
loop), ``app_thread`` with ``time.sleep`` (a step thread). Used by ``io_bench``."""

from __future__ import annotations

import asyncio
import time

from stopline import App, Automation, Evidence, ReportForReview

WAIT = 0.05


def discover(ctx):  # type: ignore[no-untyped-def]
    return []


async def observe_async(ctx):  # type: ignore[no-untyped-def]
    await asyncio.sleep(WAIT)
    return Evidence({"ok": True})


def observe_thread(ctx):  # type: ignore[no-untyped-def]
    time.sleep(WAIT)
    return Evidence({"ok": True})


def propose(ctx):  # type: ignore[no-untyped-def]
    return ReportForReview({"ok": True})


app_async = App([Automation("io", discover, observe_async, propose, every=3600)])
app_thread = App([Automation("io", discover, observe_thread, propose, every=3600)])


def observe_fast(ctx):  # type: ignore[no-untyped-def]
    return Evidence({"ok": True})


# no wait at all: the memory scenario drains 200 items and seeds the backlog with one
app_fast = App([Automation("fast", discover, observe_fast, propose, every=3600)])
