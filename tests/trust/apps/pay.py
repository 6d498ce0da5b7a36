"""A test automation whose payments need approval, for the signed-mode tests.

It discovers ``keys`` (``STOPLINE_TEST_KEYS``, comma-separated; default ``k1``), proposes ``pay``
on each (``STOPLINE_TEST_APPROVALS`` distinct approvers holding ``approver``), and its execute
hook appends ``{"hook": "execute", "item", "digest", "amount"}`` to ``STOPLINE_TEST_LOG`` before
it delivers one receipt to the directory target ``STOPLINE_TEST_OUT``. So a test can tell
whether the hook ever ran and whether any remote object was created.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from stopline.core.artifacts import Artifact
from stopline.core.policy import ApprovalPolicy, ApprovalRule, RetryPolicy
from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import Deliver, Evidence, Proposal
from stopline.targets.directory import DirectoryTarget

APP = f"{Path(__file__).resolve()}:app"
LOG_ENV, OUT_ENV = "STOPLINE_TEST_LOG", "STOPLINE_TEST_OUT"
KEYS_ENV, APPROVALS_ENV = "STOPLINE_TEST_KEYS", "STOPLINE_TEST_APPROVALS"


def executed(log: Path) -> list[dict[str, Any]]:
    """Every call of the execute hook so far."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text("utf-8").splitlines() if line.strip()]


def build_app(log: Path, out: Path, keys: Iterable[str] = ("k1",), approvals: int = 2) -> App:
    def discover(ctx: HookContext) -> list[str]:
        return list(keys)

    def observe(ctx: HookContext) -> Evidence:
        assert ctx.item is not None
        return Evidence({"account": ctx.item.key, "balance": 100})

    def propose(ctx: HookContext) -> Proposal:
        assert ctx.item is not None
        return Proposal("pay", {"amount": 10, "to": ctx.item.key}, target=ctx.item.key)

    def execute(ctx: HookContext) -> Deliver:
        assert ctx.item is not None and ctx.proposal is not None
        amount = ctx.proposal["params"]["amount"]
        entry = {"hook": "execute", "item": ctx.item.id, "digest": ctx.proposal["digest"]}
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({**entry, "amount": amount}) + "\n")
        receipt = Artifact(
            key="receipt", title=f"receipt {ctx.item.key}", summary="", body=f"paid {amount}"
        )
        return Deliver([receipt])

    automation = Automation(
        name="pay",
        discover=discover,
        observe=observe,
        propose=propose,
        execute=execute,
        every=3600,
        target=DirectoryTarget(out),
        retry=RetryPolicy(max_attempts=3, base_delay=0.05, max_delay=0.1),
        approval=ApprovalPolicy(
            rules={
                "pay": ApprovalRule(roles=("approver",), approvals=approvals, max_evidence_age=3600)
            }
        ),
    )
    return App([automation])  # no actors to seed: in signed mode the certificates say who


def app() -> App:
    """The entry point of ``stopline run``, configured from the environment."""
    keys = (os.environ.get(KEYS_ENV) or "k1").split(",")
    approvals = int(os.environ.get(APPROVALS_ENV) or "2")
    return build_app(Path(os.environ[LOG_ENV]), Path(os.environ[OUT_ENV]), keys, approvals)
