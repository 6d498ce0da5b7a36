"""Severity from an automation's code to the item: a proposal's own, else the automation's
default, else none (the inbox shows ``normal``); a value outside the closed set is refused
when the app is loaded, or recorded as ``invalid_output``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from stopline.core.states import State
from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import Evidence, Proposal
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.worker import Worker
from stopline.store import open_store
from stopline.store.insights import StopQuery

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
SAID = {"loud": "critical", "quiet": None, "wrong": "urgent"}


def propose(ctx: HookContext) -> Proposal:
    assert ctx.item is not None
    return Proposal("renew", {"host": ctx.item.key}, severity=SAID[ctx.item.key])


def automation(name: str, severity: str | None) -> Automation:
    return Automation(
        name=name,
        discover=lambda ctx: sorted(SAID),
        observe=lambda ctx: Evidence({"days_left": 0}),
        propose=propose,
        severity=severity,
    )


def test_the_proposal_then_the_automation_says_how_severe(tmp_path: Path) -> None:
    app = App([automation("certs", "high"), automation("plain", None)])
    store = open_store(f"sqlite:///{tmp_path / 'severity.db'}")
    try:
        Scheduler(store, app, clock=lambda: T0).tick(force=True)
        worker = Worker(store, app, clock=lambda: T0, renew=False)
        while worker.tick():
            pass
        found = {
            f"{i.automation}/{i.key}": (i.state, i.doc("severity")) for i in store.list_items()
        }
        insights = {
            f"{r.item.automation}/{r.item.key}": r.severity
            for r in store.insights.stop_page(StopQuery())
        }
    finally:
        store.close()
    waiting = State.AWAITING_APPROVAL
    assert found["certs/loud"] == (waiting, "critical")
    assert found["certs/quiet"] == (waiting, "high")  # the automation's default
    assert found["plain/quiet"] == (waiting, None)
    assert insights["plain/quiet"] == "normal"
    assert found["certs/wrong"][0] is State.FAILED  # invalid_output: not one of the set
    assert found["plain/wrong"][0] is State.FAILED


def test_an_automation_with_an_unknown_severity_is_refused() -> None:
    with pytest.raises(ValueError, match="critical"):
        automation("certs", "urgent")
