"""The approval guard inside a plain agent loop (no model: the plan is scripted).

The loop works through planned tool calls. A guarded tool (``restart``) proposes its exact call
the first time and raises :class:`~stopline.agents.guard.ApprovalPending`; the loop waits for a
person's decision and calls the tool again, which then runs once with exactly the approved
arguments. Reading tools (``check``) need no approval. Run it::

    python -m stopline.examples.agent_loop --db sqlite:///agent-demo.db

and approve in another terminal with the command it prints. Calling the loop again runs
nothing twice: the restart's recorded outcome comes back and nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from ..agents.guard import ApprovalGuard, ApprovalPending, GuardError
from ..runtime.scheduler import Scheduler
from ..store import open_store
from .agent import AGENT, AUTOMATION, app, inspect_service

RESTARTED: list[str] = []  # what the "orchestrator" did, in this process


def plan() -> list[tuple[str, dict[str, Any]]]:
    """What a model would have decided to call, in order."""
    return [
        ("check", {"service": "billing-api"}),
        ("restart", {"service": "billing-api", "grace": 30}),
    ]


def tools(guard: ApprovalGuard) -> dict[str, Callable[..., Any]]:
    def check(service: str) -> dict[str, Any]:
        return inspect_service(service)

    @guard.requires_approval(action="restart", target=lambda service, grace=30: service)
    def restart(service: str, grace: int = 30) -> dict[str, Any]:
        RESTARTED.append(service)
        return {"restarted": service, "grace": grace}

    return {"check": check, "restart": restart}


def run_loop(db: str, wait: int, say: Callable[[str], None] = print) -> int:
    store = open_store(db)
    try:
        Scheduler(store, app).register()  # the agent automation and the demo's actors
        guard = ApprovalGuard(store, agent=AGENT, automation=AUTOMATION)
        available = tools(guard)
        for name, arguments in plan():
            while True:
                try:
                    result = available[name](**arguments)
                except ApprovalPending as waiting:
                    p = waiting.pending
                    say(
                        f"{name} waits for approval:\n  stopline approve {p.ref} --proposal"
                        f" {p.digest} --actor alice --db {db}"
                    )
                    status = guard.wait(p, timeout=wait)
                    say(f"decision: {status}")
                    if status != "approved":
                        return 3
                    continue
                except GuardError as stopped:
                    say(f"{name} did not run: {stopped}")
                    return 3
                say(f"{name} -> {result}")
                break
        return 0
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the approval guard in a plain agent loop")
    parser.add_argument("--db", default="sqlite:///agent-demo.db", help="the database URL")
    parser.add_argument("--wait", type=int, default=600, help="seconds to wait for a person")
    args = parser.parse_args(argv)
    return run_loop(args.db, args.wait)


if __name__ == "__main__":
    sys.exit(main())
