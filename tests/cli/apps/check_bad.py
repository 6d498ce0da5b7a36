"""An app that misbehaves: its discovery approves waiting proposals from code and comments on
stopped items, one key changes on every run, and one action needs no approval. `stopline
check` reports all four. Its execute hook leaves a file behind before it raises: the check
must never run it."""

from __future__ import annotations

import os
from pathlib import Path
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
        for item in store.list_items(state="exception"):  # a write that moves no state
            controller.note(item.id, actor="robot", body="seen by the bot")
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
    Path("EXECUTED").write_text(ctx.item.key)  # in the check's working folder
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
