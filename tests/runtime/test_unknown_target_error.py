"""An exception a target raises that stopline does not know (no target error class) is not
taken for a passing outage: it stops the item for a person under its own class name, and the
write is not retried. On both stores, a real worker in process and a real directory target."""

from __future__ import annotations

from pathlib import Path

from stopline import (
    App,
    ApprovalPolicy,
    ApprovalRule,
    Artifact,
    Automation,
    Deliver,
    Evidence,
    Proposal,
    RetryPolicy,
)
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.worker import Worker
from stopline.store import Store
from stopline.targets.base import RemoteRef
from stopline.targets.directory import DirectoryTarget


class Broken(DirectoryTarget):
    """A target whose create fails with an error of its own (a bug, not an outage)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.creates = 0

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        self.creates += 1
        raise KeyError("remote_id")


def test_an_unknown_target_error_stops_the_item_for_a_person(store: Store, tmp_path: Path) -> None:
    target = Broken(tmp_path / "out")
    automation = Automation(
        "ops",
        lambda ctx: ["notice"],
        lambda ctx: Evidence({"outage": True}),
        lambda ctx: Proposal("publish", {"page": "status"}),
        execute=lambda ctx: Deliver([Artifact("notice", "Outage", "API down", "We are on it.")]),
        target=target,
        approval=ApprovalPolicy(default=ApprovalRule(approvals=0)),
        retry=RetryPolicy(max_attempts=5, base_delay=0.0),
    )
    app = App([automation])
    scheduler = Scheduler(store, app)
    scheduler.register()
    scheduler.tick(force=True)
    worker = Worker(store, app, worker_id="w1", renew=False, host_trust=False)
    while worker.tick():
        pass
    (item,) = store.list_items(automation="ops")
    assert item.state.value == "exception", item.state
    assert target.creates == 1
    assert "KeyError" in str(store.history(item.id)[-1].detail)
