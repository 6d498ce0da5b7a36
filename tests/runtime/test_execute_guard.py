"""The step that takes an approved item into ``delivering`` checks the whole record first:
an approved item whose history was rewritten by SQL after the approval (one event's detail
changed, nothing re-hashed) is stopped where it is, with no ``execute`` decision recorded and
the execute hook never run. (The delivery step checks again before any remote call; this
holds the check of the step before it on its own.) On both stores, a real worker in process."""

from __future__ import annotations

from typing import Any

from integrity.attacker import Attacker
from stopline import (
    App,
    ApprovalPolicy,
    ApprovalRule,
    Automation,
    Deliver,
    Evidence,
    Proposal,
)
from stopline.controller import Controller
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.worker import Worker
from stopline.store import Store


def test_an_approved_item_with_a_rewritten_history_is_not_executed(
    store: Store, store_url: str
) -> None:
    runs: list[str] = []

    def execute(ctx: Any) -> Deliver:
        runs.append(ctx.item.id)
        return Deliver(result={"restarted": True})

    automation = Automation(
        "ops",
        lambda ctx: ["billing-api"],
        lambda ctx: Evidence({"p99_ms": 4100}),
        lambda ctx: Proposal("restart", {"service": "billing-api"}),
        execute=execute,
        approval=ApprovalPolicy(default=ApprovalRule(roles=("approver",), approvals=1)),
    )
    app = App([automation], actors={"alice": ("approver",)})
    scheduler = Scheduler(store, app)
    scheduler.register()
    scheduler.tick(force=True)
    worker = Worker(store, app, worker_id="w1", renew=False, host_trust=False)
    while worker.tick():
        pass
    (item,) = store.list_items(automation="ops")
    assert item.state.value == "awaiting_approval"
    digest = item.doc("proposal")["digest"]
    assert Controller(store).approve(item.id, proposal=digest, actor="alice").applied
    attacker = Attacker(store_url)
    try:
        changed = attacker.sql(
            "UPDATE events SET detail = :detail WHERE item_id = :id AND seq = 1",
            {"id": item.id, "detail": attacker.json({"rewritten": True})},
        )
    finally:
        attacker.close()
    assert changed == 1
    while worker.tick():
        pass
    after = store.get(item.id)
    assert after is not None and after.state.value == "exception", after.state
    last = store.history(item.id)[-1]
    assert (last.command, last.from_state.value if last.from_state else None) == (
        "integrity_failed",
        "approved",
    )
    assert [f["reason"] for f in last.detail["findings"]] == ["event_altered"]
    assert not [e for e in store.history(item.id) if e.command == "execute"]
    assert runs == []
