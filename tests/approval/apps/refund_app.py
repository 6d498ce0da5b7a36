"""A small test automation whose proposals need approval.

Every call of its ``propose`` and ``execute`` hooks is appended, one JSON object a line, to a
log file, so a test can tell exactly what ran: ``{"hook": "execute", "item": ..., "digest": ...}``.

``build_app`` makes one in-process; ``app`` is the ``stopline run tests/approval/apps/
refund_app.py:app`` entry point, configured by ``STOPLINE_TEST_LOG`` (the log file) and
``STOPLINE_TEST_APP`` (a JSON object of ``build_app`` keyword arguments).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from stopline.core.policy import ApprovalPolicy, ApprovalRule, RetryPolicy
from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import Deliver, Evidence, Proposal, ReportForReview

LOG_ENV = "STOPLINE_TEST_LOG"
CONFIG_ENV = "STOPLINE_TEST_APP"
ACTION = "refund"

# alice and erin may approve and edit; bob may only approve; carol may only edit (operator);
# dana only reads.
ACTORS: dict[str, tuple[str, ...]] = {
    "alice": ("approver", "operator"),
    "bob": ("approver",),
    "carol": ("operator",),
    "dana": ("viewer",),
    "erin": ("approver", "operator"),
}


def record(log: Path, **entry: Any) -> None:
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")


def read_log(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text("utf-8").splitlines() if line.strip()]


def build_app(
    log: Path | str,
    *,
    name: str = "refund",
    keys: Sequence[str] = ("k1",),
    approvals: int = 1,
    max_evidence_age: float = 3600.0,
    separation_of_duties: bool = True,
    report_keys: Sequence[str] = (),
    echo_rejection: bool = True,
    actors: Mapping[str, Sequence[str]] | None = None,
) -> App:
    """One automation ``name`` discovering ``keys``; each proposes ``refund`` on its key.

    ``report_keys`` propose nothing (they stop in ``ready_for_review``). With ``echo_rejection``
    the propose hook puts the last rejection's reason into the proposal's parameters.
    """
    path = Path(log)

    def discover(ctx: HookContext) -> Iterable[str]:
        return list(keys)

    def observe(ctx: HookContext) -> Evidence:
        assert ctx.item is not None
        return Evidence({"key": ctx.item.key, "balance": 100})

    def propose(ctx: HookContext) -> Proposal | ReportForReview:
        assert ctx.item is not None
        rejection = ctx.rejection
        reason = None if rejection is None else rejection["reason"]
        record(path, hook="propose", item=ctx.item.id, rejection=reason)
        if ctx.item.key in report_keys:
            return ReportForReview({"summary": f"nothing to do for {ctx.item.key}"})
        params: dict[str, Any] = {"amount": 10, "to": ctx.item.key}
        if echo_rejection and reason is not None:
            params["revised_after"] = reason
        return Proposal(ACTION, params, target=ctx.item.key, rationale="refund within policy")

    def execute(ctx: HookContext) -> Deliver:
        assert ctx.item is not None and ctx.proposal is not None
        proposal = ctx.proposal
        record(
            path,
            hook="execute",
            item=ctx.item.id,
            digest=proposal["digest"],
            params=proposal["params"],
        )
        return Deliver(result={"refunded": ctx.proposal["params"]["amount"]})

    automation = Automation(
        name=name,
        discover=discover,
        observe=observe,
        propose=propose,
        execute=execute,
        every=3600,
        retry=RetryPolicy(max_attempts=3, base_delay=0.05, max_delay=0.1),
        approval=ApprovalPolicy(
            rules={
                ACTION: ApprovalRule(
                    roles=("approver",),
                    approvals=approvals,
                    max_evidence_age=max_evidence_age,
                    separation_of_duties=separation_of_duties,
                )
            }
        ),
    )
    return App([automation], actors=dict(ACTORS if actors is None else actors))


def app() -> App:
    """The entry point of ``stopline run``: configured from the environment."""
    config = json.loads(os.environ.get(CONFIG_ENV) or "{}")
    return build_app(os.environ[LOG_ENV], **config)
