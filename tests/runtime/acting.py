"""What the tests of workers running several items at once share: items discovered, a worker
drained, an automation that acts (its proposal needs no approval), a store that counts how the
checks before acting are read, and an edit of an item's first event made by SQL behind the
store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers import T0, decide_at
from integrity.attacker import Attacker
from stopline import App, ApprovalPolicy, ApprovalRule, Automation, Deliver, Evidence, Proposal
from stopline.core.commands import Discover
from stopline.runtime.automation import HookContext
from stopline.runtime.worker import Worker
from stopline.store import Store


def discovered(store: Store, n: int, prefix: str = "i") -> list[str]:
    """``n`` items of automation ``auto`` discovered, due at once."""
    ids = [f"{prefix}{k:03d}" for k in range(n)]
    for k, item_id in enumerate(ids):
        store.insert(decide_at(None, Discover(item_id, "auto", f"k{k}", {}), T0))
    return ids


def drain(worker: Worker) -> None:
    """Tick until nothing is due or in flight (each wait inside has its own deadline)."""
    for _ in range(100_000):
        if not worker.tick():
            break
    worker.close()


def acting_app(propose: Callable[[HookContext], Proposal], executed: list[str]) -> App:
    """Automation ``auto``: observe, ``propose``, execute (recorded in ``executed``)."""

    def execute(ctx: HookContext) -> Deliver:
        executed.append(ctx.item.id)
        return Deliver()

    auto = Automation(
        "auto",
        lambda ctx: [],
        lambda ctx: Evidence({"ok": True}),
        propose,
        execute=execute,
        approval=ApprovalPolicy(default=ApprovalRule(approvals=0)),
    )
    return App([auto])


class Reads:
    """The store, counting the checks before acting it is asked for, alone or together."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.alone: list[str] = []
        self.together: list[list[str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def guard_reads(self, item_id: str, *, history: bool, registry: bool) -> Any:
        if history:
            self.alone.append(item_id)
        return self.store.guard_reads(item_id, history=history, registry=registry)

    def guard_reads_many(self, item_ids: Any) -> Any:
        self.together.append(list(item_ids))
        return self.store.guard_reads_many(item_ids)


def edit_first_event(url: str, item_id: str) -> None:
    """Rewrite the actor of the item's first event, by SQL (no hash recomputed)."""
    attacker = Attacker(url)
    try:
        touched = attacker.sql(
            "UPDATE events SET actor = :actor WHERE item_id = :id AND seq = 1",
            {"actor": "mallory", "id": item_id},
        )
    finally:
        attacker.close()
    assert touched == 1
