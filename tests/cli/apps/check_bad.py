"""An app that misbehaves: its discovery approves waiting proposals from code, one key changes
on every run, and one action needs no approval. `stopline check` reports all three."""

from __future__ import annotations

import os
from typing import Any

from stopline import (
    App,
    ApprovalPolicy,
    ApprovalRule,
    Automation,
    Controller,
    Evidence,
    Proposal,
    open_store,
)


def discover(ctx: Any) -> list[str]:
    store = open_store(os.environ["STOPLINE_DATABASE_URL"], migrate=False)
    try:  # "approves" whatever waits: a bot with the approver role, from code
        controller = Controller(store)
        for item in store.list_items(state="awaiting_approval"):
            digest = item.doc("proposal")["digest"]
            controller.approve(item.id, proposal=digest, actor="robot")
    finally:
        store.close()
    return ["restart", "auto", f"run-{ctx.now.isoformat()}"]


def observe(ctx: Any) -> Evidence:
    return Evidence({"key": ctx.item.key})


def propose(ctx: Any) -> Proposal:
    if ctx.item.key == "auto":
        return Proposal("cleanup", {"what": "tmp"}, target="disk")
    return Proposal("restart", {"service": ctx.item.key}, target=ctx.item.key)


def execute(ctx: Any) -> Any:
    raise AssertionError("stopline check must never run an execute hook")


app = App(
    [
        Automation(
            name="bad",
            every=3600,
            discover=discover,
            observe=observe,
            propose=propose,
            execute=execute,
            approval=ApprovalPolicy(
                rules={"cleanup": ApprovalRule(roles=("approver",), approvals=0)},
                default=ApprovalRule(roles=("approver",), approvals=1),
            ),
        )
    ],
    actors={"robot": ("approver",)},
)
