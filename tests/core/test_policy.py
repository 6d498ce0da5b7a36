"""The policies the core decides with (``core/policy.py``): the values each refuses, the rule
an action takes, and a policy read back from the database exactly as it was stored (its
version too), failing closed on what it does not know. Each test was missing while a mutant
of the module passed the core's other tests."""

from __future__ import annotations

from typing import Any

import pytest

from stopline.core.policy import (
    PUBLISH,
    ApprovalPolicy,
    ApprovalRule,
    DeliveryPolicy,
    Policy,
    RetryPolicy,
)


@pytest.mark.parametrize(
    "bad",
    [
        {"max_attempts": 0},
        {"base_delay": -1},
        {"max_delay": -1},
        {"backoff": 0.5},
        {"jitter": 1.5},
        {"jitter": -0.1},
        {"resume_cap": 0},
    ],
)
def test_a_retry_policy_refuses_what_cannot_be_a_budget(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**bad)


def test_a_retry_policy_takes_its_smallest_values() -> None:
    RetryPolicy(max_attempts=1, base_delay=0, max_delay=0, backoff=1, jitter=1, resume_cap=1)


@pytest.mark.parametrize(
    "bad",
    [
        {"approvals": -1},
        {"approvals": 1, "roles": ()},
        {"max_evidence_age": 0},
        {"max_evidence_age": -5},
    ],
)
def test_an_approval_rule_refuses_what_no_one_could_meet(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ApprovalRule(**bad)


def test_an_action_that_needs_no_approval_needs_no_role() -> None:
    assert ApprovalRule(approvals=0, roles=()).approvals == 0


def test_an_action_takes_its_own_rule_and_others_the_default() -> None:
    strict = ApprovalRule(approvals=2)
    policy = ApprovalPolicy(rules={"restart": strict})
    assert policy.rule("restart") is strict
    assert policy.rule("notify") == ApprovalRule()


def test_a_delivery_mode_and_a_lease_are_refused_when_they_mean_nothing() -> None:
    with pytest.raises(ValueError):
        DeliveryPolicy(mode="auto")
    with pytest.raises(ValueError):
        Policy(lease_seconds=0)


def test_a_policy_reads_back_as_it_was_stored_with_its_version() -> None:
    policy = Policy(
        retry=RetryPolicy(max_attempts=5),
        approval=ApprovalPolicy(
            rules={"restart": ApprovalRule(roles=("approver", "sre"), approvals=2)},
            default=ApprovalRule(returners_may_approve=True),
        ),
        delivery=DeliveryPolicy(mode=PUBLISH, revisable=False, publish_roles=("publisher",)),
        lease_seconds=12,
        step_retry={"observing": RetryPolicy(max_attempts=9)},
        target={"kind": "directory", "root": "/srv/out"},
        revise_hook=True,
        agent=True,
    )
    again = Policy.from_plain(policy.to_plain())
    assert again == policy
    assert again.version == policy.version
    assert again.approval.rule("restart").approvals == 2
    assert again.approval.default.returners_may_approve is True
    assert again.delivery.revisable is False
    assert again.retry_for("observing").max_attempts == 9
    assert dict(again.target) == {"kind": "directory", "root": "/srv/out"}


def test_the_order_of_roles_names_no_other_policy() -> None:
    one = ApprovalRule(roles=("sre", "approver"))
    other = ApprovalRule(roles=("approver", "sre"))
    assert one.to_plain()["roles"] == ["approver", "sre"]
    assert ApprovalPolicy(default=one).version == ApprovalPolicy(default=other).version


def test_a_policy_without_an_agent_has_the_version_it_had_before_agents() -> None:
    assert "agent" not in Policy().to_plain()
    assert Policy(agent=True).to_plain()["agent"] is True


@pytest.mark.parametrize("value", ["true", 1, "yes"])
def test_flags_read_back_are_true_only_when_stored_as_true(value: Any) -> None:
    """A stored policy whose ``revise_hook`` or ``agent`` is anything but ``true`` reads as
    off: what it does not know it does not grant."""
    plain = Policy().to_plain()
    plain["revise_hook"] = value
    plain["agent"] = value
    read = Policy.from_plain(plain)
    assert read.revise_hook is False and read.agent is False
