"""An app whose items stop and stay stopped: `stopline check` passes it."""

from __future__ import annotations

from typing import Any

from stopline import (
    App,
    ApprovalPolicy,
    ApprovalRule,
    Automation,
    Evidence,
    NeedsEyes,
    NothingToDo,
    Proposal,
    ReportForReview,
    RetryPolicy,
    TransientError,
)

KEYS = ("restart", "report", "unclear", "flaky", "fine")


def discover(ctx: Any) -> list[str]:
    return list(KEYS)


def observe(ctx: Any) -> Evidence:
    if ctx.item.key == "flaky":
        raise TransientError("the health endpoint timed out")
    return Evidence({"key": ctx.item.key})


def propose(ctx: Any) -> Any:
    key = ctx.item.key
    if key == "report":
        return ReportForReview({"summary": "all good"})
    if key == "unclear":
        return NeedsEyes("cannot tell", owner="ops")
    if key == "fine":
        return NothingToDo("healthy")
    return Proposal("restart", {"service": key}, target=key, rationale="degraded")


def execute(ctx: Any) -> Any:
    raise AssertionError("stopline check must never run an execute hook")


app = App(
    [
        Automation(
            name="good",
            every=3600,
            discover=discover,
            observe=observe,
            propose=propose,
            execute=execute,
            retry=RetryPolicy(max_attempts=2, base_delay=0.05, max_delay=0.05),
            approval=ApprovalPolicy(default=ApprovalRule(roles=("approver",), approvals=1)),
        )
    ],
    actors={"alice": ("approver",)},
)
