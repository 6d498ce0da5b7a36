"""The worker process of ``stopline check``: ``python -m stopline.runtime.checkworker APP URL
OUT``.

It loads the app, takes away what acts (every execute hook answers "needs eyes" without
running, there is no target, no revise hook), fires discovery at once, then claims and runs
steps and fires the schedule until it is killed. Each line it writes to OUT is one JSON
document: ``{"event": "discovered"}`` once discovery ran, ``{"event": "failure", "line": ...}``
for each failure of the app's own code.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from ..store import open_store
from . import outcomes
from .automation import App, Automation, HookContext
from .loader import load_app
from .runner import _Stop, work_loop
from .scheduler import Scheduler
from .watch import HookFailures, watched
from .worker import Worker

CHECK_OWNER = "stopline-check"
WOULD_ACT = "stopline check: the proposal needs no approval, so the worker would act now"


def _held(ctx: HookContext) -> Any:
    return outcomes.NeedsEyes(WOULD_ACT, owner=CHECK_OWNER)


def disarmed(app: App) -> App:
    """``app`` with nothing that acts: no execute or revise hook runs, no target is written."""
    automations: list[Automation] = [
        dataclasses.replace(a, execute=_held, target=None, revise=None) for a in app.automations
    ]
    return App(automations, dict(app.actors))


def _emit(out: TextIO, doc: dict[str, Any]) -> None:
    out.write(json.dumps(doc) + "\n")
    out.flush()


def main(argv: Sequence[str] | None = None) -> int:
    spec, url, path = list(argv if argv is not None else sys.argv[1:])
    with open(path, "a", encoding="utf-8") as out:
        failures = HookFailures(echo=lambda line: _emit(out, {"event": "failure", "line": line}))
        app, _ = watched(disarmed(load_app(spec)), failures)
        store = open_store(url)
        scheduler = Scheduler(store, app)
        scheduler.register()
        scheduler.tick(force=True)
        _emit(out, {"event": "discovered"})
        worker = Worker(store, app)
        work_loop(worker, once=False, linger=0.0, stop=_Stop(), scheduler=scheduler)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
