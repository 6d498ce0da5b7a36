"""One automation that publishes one outage notice through a target, and a worker in process
that drains it: what the runtime's delivery tests share."""

from __future__ import annotations

from typing import Any

from stopline import (
    App,
    ApprovalPolicy,
    ApprovalRule,
    Artifact,
    Automation,
    Deliver,
    Evidence,
    Proposal,
)
from stopline.core.records import Item
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.worker import Worker
from stopline.store import Store
from stopline.targets.base import Target


def notice_automation(target: Target, **options: Any) -> Automation:
    """``ops``: one key, an outage observed, a ``publish`` proposal, one notice to deliver
    (no approval needed unless ``approval`` says otherwise; ``execute`` may be another hook)."""
    options.setdefault("approval", ApprovalPolicy(default=ApprovalRule(approvals=0)))
    options.setdefault(
        "execute", lambda ctx: Deliver([Artifact("notice", "Outage", "API down", "We are on it.")])
    )
    return Automation(
        "ops",
        lambda ctx: ["notice"],
        lambda ctx: Evidence({"outage": True}),
        lambda ctx: Proposal("publish", {"page": "status"}),
        target=target,
        **options,
    )


def discovered(store: Store, app: App) -> Worker:
    """``app`` registered and its discovery run: a worker in process to drain it."""
    scheduler = Scheduler(store, app)
    scheduler.register()
    scheduler.tick(force=True)
    return Worker(store, app, worker_id="w1", renew=False, host_trust=False)


def drain(worker: Worker) -> None:
    """Run every step due until none is."""
    while worker.tick():
        pass


def drained(store: Store, automation: Automation) -> Item:
    """Discover, then let one worker run every step due until none is: the item as left."""
    drain(discovered(store, App([automation])))
    (item,) = store.list_items(automation=automation.name)
    return item
