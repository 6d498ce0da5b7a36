"""An app as code declares it (runtime/automation.py): what ``Automation``, ``AgentAutomation``
and ``App`` refuse when they are built, the policy each stores, and what a hook reads from
its ``HookContext``. Pure: no store, no worker."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from helpers import T0
from stopline.core.names import InvalidName
from stopline.core.policy import ApprovalPolicy, ApprovalRule, DeliveryPolicy, Policy
from stopline.core.records import Item
from stopline.core.states import State
from stopline.runtime.automation import AgentAutomation, App, Automation, HookContext
from stopline.runtime.outcomes import Evidence
from stopline.targets.directory import DirectoryTarget


def _observe(ctx: HookContext) -> Evidence:
    return Evidence({})


def plain(name: str = "ops", **changes: Any) -> Automation:
    hooks: dict[str, Any] = {"discover": lambda ctx: [], "observe": _observe, "propose": _observe}
    return Automation(name, **{**hooks, **changes})


class StreamingHook:
    """A callable object whose ``__call__`` is an async generator: many answers, not one."""

    async def __call__(self, ctx: HookContext) -> AsyncIterator[Evidence]:
        yield Evidence({})


def test_a_hook_object_whose_call_is_an_async_generator_is_refused() -> None:
    with pytest.raises(TypeError, match="the observe hook of automation 'ops' is an async gen"):
        plain(observe=StreamingHook())


@pytest.mark.parametrize("concurrency", [0, -1, True, 1.5, "2"])
def test_concurrency_is_a_whole_number_of_at_least_one(concurrency: Any) -> None:
    with pytest.raises(ValueError, match="concurrency of ops"):
        plain(concurrency=concurrency)
    assert plain(concurrency=1).concurrency == 1 and plain().concurrency is None


ROLE_PLACES = {
    "a rule's roles": {
        "approval": ApprovalPolicy(rules={"restart": ApprovalRule(roles=("Approver",))})
    },
    "the default rule's roles": {
        "approval": ApprovalPolicy(default=ApprovalRule(roles=("approver ",)))
    },
}


@pytest.mark.parametrize("place", sorted(ROLE_PLACES))
@pytest.mark.parametrize("kind", ["automation", "agent automation"])
def test_a_role_a_policy_names_must_be_normal(place: str, kind: str) -> None:
    """A role written otherwise than it is granted would never match an actor's: refused."""
    with pytest.raises(InvalidName):
        if kind == "automation":
            plain(**ROLE_PLACES[place])
        else:
            AgentAutomation("ops", **ROLE_PLACES[place])


def test_a_publish_role_must_be_normal() -> None:
    with pytest.raises(InvalidName):
        plain(delivery=DeliveryPolicy(publish_roles=("Publisher",)))


def test_a_severity_outside_the_set_is_refused() -> None:
    with pytest.raises(ValueError, match="severity of automation 'ops'"):
        plain(severity="apocalyptic")
    assert plain(severity="high").severity == "high"


@pytest.mark.parametrize("seconds", [0, -1, float("inf"), float("nan"), "5", True])
def test_an_agent_automations_lease_is_positive_finite_seconds(seconds: Any) -> None:
    with pytest.raises(ValueError, match="lease_seconds of ops"):
        AgentAutomation("ops", lease_seconds=seconds)


@pytest.mark.parametrize("name", ["Ops", "ops/team", "ops team"])
def test_an_automation_name_must_be_normal(name: str) -> None:
    with pytest.raises(InvalidName):
        plain(name)
    with pytest.raises(InvalidName):
        AgentAutomation(name)


def test_the_stored_policy_says_whether_a_revise_hook_and_which_target() -> None:
    """``revise_hook`` gates a revision (no hook: refused); ``target`` is what ``reconcile``
    and ``publish`` rebuild the target from when no app is given."""
    assert plain().policy.revise_hook is False and plain().policy.target == {}
    target = DirectoryTarget(Path("/srv/out"), name="drafts")
    revisable = plain(revise=lambda ctx, why, artifacts: artifacts, target=target)
    assert revisable.policy.revise_hook is True
    assert revisable.policy.target == {"kind": "directory", "root": "/srv/out", "name": "drafts"}


def test_an_agent_automations_policy_is_an_agents_and_never_revisable() -> None:
    policy = AgentAutomation("ops").policy
    assert policy.agent is True and policy.delivery.revisable is False
    assert plain().policy.agent is False


def test_an_apps_policies_are_its_automations_and_its_agents() -> None:
    app = App([plain("ops")], agents=[AgentAutomation("helper")])
    assert sorted(app.policies()) == ["helper", "ops"]
    assert all(isinstance(p, Policy) for p in app.policies().values())


@pytest.mark.parametrize(
    ("automations", "agents"),
    [(["ops", "ops"], []), (["ops"], ["ops"]), ([], ["ops", "ops"])],
)
def test_names_are_unique_across_automations_and_agents(
    automations: list[str], agents: list[str]
) -> None:
    with pytest.raises(ValueError, match="automation names must be unique"):
        App([plain(n) for n in automations], agents=[AgentAutomation(n) for n in agents])


@pytest.mark.parametrize(
    ("actors", "error"),
    [
        ({"alice": "approver"}, "are a list, not the text 'approver'"),
        ({"Alice": ["approver"]}, "actor"),
        ({"alice": ["Approver"]}, "role"),
        ({"alice": ["approver"], "a1ice": ["viewer"]}, "look alike"),
    ],
)
def test_an_apps_actors_are_refused_unless_normal_listed_and_unlike(
    actors: dict[str, Any], error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        App([plain()], actors=actors)


def _context(item: Item | None) -> HookContext:
    return HookContext(T0, item, "ops", logging.getLogger("test"), lambda: T0)


def _item(state: State = State.DELIVERING, **data: Any) -> Item:
    at: datetime = T0
    return Item("it-1", "ops", "k-1", state, 3, 2, "h", at, at, 1, 3, at, data=data)


def test_an_idempotency_key_names_the_item_its_delivery_and_its_step() -> None:
    """Stable across the retries of one step; another step or another delivery of the same
    item (a revision) gets another key."""
    keys = {
        _context(_item()).idempotency_key,
        _context(_item(State.PENDING_READBACK)).idempotency_key,
        _context(_item(delivery_seq=2)).idempotency_key,
    }
    assert len(keys) == 3
    assert _context(_item(delivery_seq=2)).idempotency_key == "it-1:2:delivering"
    assert _context(_item()).idempotency_key == _context(_item()).idempotency_key


def test_a_hook_reads_each_document_as_it_was_given() -> None:
    item = _item(
        input={"host": "db-1"},
        evidence={"data": {"disk": 91}, "observed_at": "2026-03-01T12:00:00Z"},
        proposal={"action": "restart"},
        rejection={"reason": "not that host"},
        corrective_input={"input": {"host": "db-2"}, "actor": "alice"},
        revision={"reason": "typo"},
    )
    ctx = _context(item)
    assert ctx.input == {"host": "db-1"} and ctx.evidence == {"disk": 91}
    assert ctx.proposal == {"action": "restart"} and ctx.rejection == {"reason": "not that host"}
    assert ctx.corrective_input == {"host": "db-2"} and ctx.revision == {"reason": "typo"}


def test_a_context_without_an_item_or_documents_reads_as_empty() -> None:
    for ctx in (_context(None), _context(_item())):
        assert ctx.input == {}
        assert ctx.evidence is ctx.proposal is ctx.rejection is None
        assert ctx.corrective_input is ctx.revision is ctx.classification is None


def test_an_app_checks_names_again_as_an_automation_may_be_renamed_after_it_was_built() -> None:
    """``Automation`` is a mutable dataclass: a name set after construction is checked when
    the app is built (and again when the scheduler registers it)."""
    renamed = plain()
    renamed.name = "ops/team"
    with pytest.raises(InvalidName):
        App([renamed])
