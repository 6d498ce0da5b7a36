"""Authority is checked again before every run of the execute hook and before every remote
write, not only before the step that takes an approved item into ``delivering``: an item whose
execute hook or create failed and is retried in ``delivering`` is not carried out once its
approval no longer holds. On both stores, with a real worker in process and a real directory
target."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
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
    RetryPolicy,
    TransientError,
)
from stopline.clock import utcnow
from stopline.controller import Controller
from stopline.core.records import Item
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.worker import Worker
from stopline.store import Store
from stopline.targets.base import RemoteRef, TargetError
from stopline.targets.directory import DirectoryTarget

from .notice import discovered, drain, notice_automation


class Run:
    """The automation registered and discovered, a worker whose clock can be moved on, and
    the approval given: the item's first attempt made (and failed) in ``delivering``."""

    def __init__(
        self,
        store: Store,
        automation: Automation,
        after_approval: Callable[[Item], None] | None = None,
    ) -> None:
        """``after_approval``: what happens to the approved item before the worker sees it."""
        app = App([automation], actors={"alice": ("approver",)})
        scheduler = Scheduler(store, app)
        scheduler.register()
        scheduler.tick(force=True)
        self.later = 0.0  # seconds the worker's clock runs ahead: the retry comes due once moved on
        self.worker = Worker(
            store,
            app,
            worker_id="w1",
            clock=lambda: utcnow() + timedelta(seconds=self.later),
            renew=False,
            host_trust=False,
        )
        self.drain()
        self.people = Controller(store)
        (self.item,) = store.list_items(automation=automation.name)
        assert self.item.state.value == "awaiting_approval"
        digest = self.item.doc("proposal")["digest"]
        assert self.people.approve(self.item.id, proposal=digest, actor="alice").applied
        if after_approval is not None:
            after_approval(self.item)
        self.drain()

    def drain(self) -> None:
        while self.worker.tick():
            pass

    def revoke_and_retry(self) -> None:
        self.people.revoke_actor("alice", "approver")
        self.later = 600.0
        self.drain()


def restart_automation(execute: Callable[[Any], Deliver], **options: Any) -> Automation:
    """``ops``: a slow API observed, its restart proposed, one approver's approval needed."""
    return Automation(
        "ops",
        lambda ctx: ["billing-api"],
        lambda ctx: Evidence({"p99_ms": 4100}),
        lambda ctx: Proposal("restart", {"service": "billing-api"}),
        execute=execute,
        approval=ApprovalPolicy(default=ApprovalRule(roles=("approver",), approvals=1)),
        **options,
    )


def test_an_approval_revoked_before_the_execute_hook_runs_again(store: Store) -> None:
    """The execute hook times out on its first run (retried in delivering); the approver's
    role is revoked; the next attempt re-checks authority first: the hook does not run again,
    and the item waits for approval again (recheck_failed), with nothing delivered."""
    runs: list[str] = []

    def execute(ctx: Any) -> Deliver:
        runs.append(ctx.item.id)
        if len(runs) == 1:
            raise TransientError("the API timed out")
        return Deliver(result={"restarted": True})

    automation = restart_automation(execute, retry=RetryPolicy(max_attempts=5, base_delay=60.0))
    run = Run(store, automation)
    item = run.item
    retried = store.get(item.id)
    assert retried is not None and retried.state.value == "delivering" and len(runs) == 1
    run.revoke_and_retry()
    after = store.get(item.id)
    assert after is not None and after.state.value == "awaiting_approval", after.state
    assert len(runs) == 1
    last = store.history(item.id)[-1]
    assert (last.command, last.from_state.value if last.from_state else None) == (
        "recheck_failed",
        "delivering",
    )


class FirstCreateFails(DirectoryTarget):
    """A directory target whose first create fails without taking effect (a transient
    outage), counting every create."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.creates = 0

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        self.creates += 1
        if self.creates == 1:
            raise TargetError("the server answered 503")
        return super().create(artifact, idempotency_key)


def test_an_approval_revoked_before_a_remote_write_is_retried(store: Store, tmp_path: Path) -> None:
    """The first create of the approved object fails (retried in delivering, its artifact
    staged); the approver's role is revoked; the next attempt re-checks authority before the
    write: nothing is created, and the item waits for approval again."""
    target = FirstCreateFails(tmp_path / "out")
    automation = notice_automation(
        target,
        approval=ApprovalPolicy(default=ApprovalRule(roles=("approver",), approvals=1)),
        retry=RetryPolicy(max_attempts=5, base_delay=60.0),
    )
    run = Run(store, automation)
    item = run.item
    retried = store.get(item.id)
    assert retried is not None and retried.state.value == "delivering" and target.creates == 1
    run.revoke_and_retry()
    after = store.get(item.id)
    assert after is not None and after.state.value == "awaiting_approval", after.state
    assert target.creates == 1
    assert not any((tmp_path / "out").rglob("*.json"))


class CountedUpdates(DirectoryTarget):
    """A directory target counting the updates that reached it."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.updates = 0

    def update(self, ref: RemoteRef, artifact: Artifact) -> RemoteRef:
        self.updates += 1
        return super().update(ref, artifact)


def test_an_operator_revoked_before_a_revision_writes_has_nothing_updated(
    store: Store, tmp_path: Path
) -> None:
    """A delivered notice; an operator asks for its revision, then loses the operator role
    before a worker takes the revision up. The revise hook may render (no acting call), but
    the guard before the update finds the requester without the role: the revision fails
    (``revision_failed``), no update reaches the target, and the object stays as delivered."""
    target = CountedUpdates(tmp_path / "out")
    revised = [Artifact("notice", "Outage", "API down", "Fixed at 10:02.")]
    automation = notice_automation(target, revise=lambda ctx, reason, current: revised)
    worker = discovered(store, App([automation], actors={"olga": ("operator",)}))
    drain(worker)
    (item,) = store.list_items(automation="ops")
    assert item.state.value == "completed"
    delivered = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert delivered

    people = Controller(store)
    asked = people.revise(item.id, actor="olga", reason="the fix landed", artifacts=["notice"])
    assert asked.applied
    people.revoke_actor("olga", "operator")
    drain(worker)

    after = store.get(item.id)
    assert after is not None and after.state.value == "revision_failed", after.state
    assert target.updates == 0
    assert {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()} == delivered
