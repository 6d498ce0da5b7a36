"""A no-op automation through the whole path: observe, propose an action whose policy needs no
approval, execute, complete. Used by ``stopline_bench``."""

from __future__ import annotations

from stopline import App, ApprovalPolicy, ApprovalRule, Automation, Deliver, Evidence, Proposal

KEYS: list[str] = []


def discover(ctx):  # type: ignore[no-untyped-def]
    return list(KEYS)


def observe(ctx):  # type: ignore[no-untyped-def]
    return Evidence({"ok": True})


def propose(ctx):  # type: ignore[no-untyped-def]
    return Proposal("noop", {})


def execute(ctx):  # type: ignore[no-untyped-def]
    return Deliver()


noop = Automation(
    name="noop",
    discover=discover,
    observe=observe,
    propose=propose,
    execute=execute,
    every=3600,
    approval=ApprovalPolicy(default=ApprovalRule(approvals=0)),
)

app = App([noop])
