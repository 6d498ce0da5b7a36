"""``watched``: an app's hooks wrapped so that each failure of its own code is counted
(runtime/watch.py), and nothing else about the app changed."""

from __future__ import annotations

from stopline.core.policy import ApprovalPolicy, ApprovalRule, Policy
from stopline.runtime.automation import AgentAutomation, App, Automation, HookContext
from stopline.runtime.outcomes import Evidence, ReportForReview
from stopline.runtime.runner import run
from stopline.runtime.watch import watched
from stopline.store import open_store


def _automation(name: str = "plain") -> Automation:
    def observe(ctx: HookContext) -> Evidence:
        return Evidence({})

    def propose(ctx: HookContext) -> ReportForReview:
        return ReportForReview({"summary": "fine"})

    return Automation(name, lambda ctx: [], observe, propose)


AGENTS = [
    AgentAutomation(
        "helper",
        approval=ApprovalPolicy(rules={"restart": ApprovalRule(roles=("approver",))}),
    )
]


def test_a_watched_app_keeps_its_actors_and_agent_automations() -> None:
    """The copy ``stopline run`` serves is the same app but for the wrapped hooks: the
    agents' policies are among those it registers."""
    app = App([_automation()], actors={"alice": ("approver",)}, agents=AGENTS)
    copy, failures = watched(app)
    assert copy.agents == AGENTS and dict(copy.actors) == {"alice": ("approver",)}
    assert copy.policies() == app.policies() and not failures


def test_stopline_run_registers_the_apps_agent_automations(store_url: str) -> None:
    """An app that declares agent automations beside its own: ``run`` registers both, so an
    agent's proposal finds its policy (before, only ``stopline mcp`` did)."""
    app = App([_automation()], actors={"alice": ("approver",)}, agents=AGENTS)
    run(app, store_url, once=True, linger=0)
    store = open_store(store_url)
    try:
        policies = store.registry().policies
        assert sorted(policies) == ["helper", "plain"]
        assert Policy.from_plain(policies["helper"].policy) == app.policies()["helper"]
    finally:
        store.close()
