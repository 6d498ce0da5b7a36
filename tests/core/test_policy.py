"""The policies the core decides with (``core/policy.py``): the values each refuses, the rule
an action takes, and a policy read back from the database exactly as it was stored (its
version too), failing closed on what it does not know. Each test was missing while a mutant
of the module passed the core's other tests."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from stopline.core.commands import Failure
from stopline.core.decide import decide
from stopline.core.decision import Outcome
from stopline.core.policy import (
    PUBLISH,
    ApprovalPolicy,
    ApprovalRule,
    DeliveryPolicy,
    Policy,
    RetryPolicy,
)
from stopline.core.states import State

from .helpers import Harness, policy


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


def test_a_long_budget_waits_its_max_delay_however_many_attempts_came_before() -> None:
    """A budget of thousands of attempts with a doubling delay: past attempt 1,024 the
    doubling overflows a float, and it must still wait ``max_delay``, not raise."""
    retry = RetryPolicy(max_attempts=5000, base_delay=1.0, backoff=2.0, max_delay=300.0)
    assert retry.delay(2000) == timedelta(seconds=300)
    assert RetryPolicy(backoff=1e300, max_delay=60).delay(3, 1.0) == timedelta(seconds=60)


def test_a_retryable_failure_deep_into_a_long_budget_is_retried_not_refused() -> None:
    """The core's decision on such a failure: a retry after ``max_delay`` (before, decide()
    raised OverflowError, and the worker recorded its own failure instead of the hook's)."""
    h = Harness(policy=policy(retry=RetryPolicy(max_attempts=5000, max_delay=300.0)))
    h.discover()
    h.claim()
    deep = replace(h.it, attempts=2000)  # the 2,000th claim of this step
    command = Failure(**h.lease(), failure_class="net", message="down", retryable=True)
    decision = decide(deep, command, h.ctx())
    assert decision.outcome is Outcome.APPLIED and decision.state is State.OBSERVING
    assert decision.after is not None
    assert decision.after.next_eligible_at == h.now + timedelta(seconds=300)


@pytest.mark.parametrize(
    "bad",
    [
        {"base_delay": math.nan},
        {"backoff": math.nan},
        {"max_delay": math.nan},
        {"max_delay": math.inf},
        {"max_delay": 1e12},  # 31,000 years: no time after now holds it
        {"base_delay": math.inf, "max_delay": 10},
        {"max_attempts": 2**31},  # more than the store's attempt count holds
        {"resume_cap": 2**31},
    ],
)
def test_a_retry_policy_refuses_delays_and_counts_no_retry_could_keep(
    bad: dict[str, Any],
) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**bad)
