"""What a recorded failure does (core/failures.py): the hook's own word, else the rule for its
class, else a stop for a person; in a revision, always revision_failed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stopline.core.commands import Failure
from stopline.core.failures import (
    HOOK_TIMEOUT,
    INVALID_OUTPUT,
    OUTCOME_UNKNOWN,
    REMOTE_IDENTITY_MISSING,
    REMOTE_OBJECT_HELD,
    REMOTE_VERSION_CONFLICT,
    RULES,
    TARGET_UNAVAILABLE,
    Handling,
    handling,
)
from stopline.core.policy import RetryPolicy
from stopline.core.states import State

from .helpers import Harness, art, policy


def fail(h: Harness, cls: str, message: str = "m", retryable: bool | None = None) -> None:
    h.ok(Failure(**h.lease(), failure_class=cls, message=message, retryable=retryable))


@given(st.text(max_size=30), st.booleans())
def test_the_hooks_own_word_wins_over_every_rule(cls: str, retryable: bool) -> None:
    """retryable True or False (RetryLater/Fail, retry_on/terminal_on) decides alone."""
    assert handling(cls, retryable) is (Handling.RETRY if retryable else Handling.FAIL)


@given(st.text(max_size=30))
def test_without_a_word_the_rule_decides_and_an_unknown_class_stops_for_a_person(
    cls: str,
) -> None:
    """No retryable given: the class's rule, or needs_eyes for a class with none."""
    assert handling(cls, None) is RULES.get(cls, Handling.NEEDS_EYES)


def test_the_rules_of_the_classes_the_worker_reports() -> None:
    """Timeouts and unavailable targets are retried, invalid output fails, a missing or
    changed remote object stops for a person."""
    assert {cls: handling(cls, None) for cls in RULES} | {
        "RecursionError": Handling.NEEDS_EYES
    } == {
        HOOK_TIMEOUT: Handling.RETRY,
        INVALID_OUTPUT: Handling.FAIL,
        OUTCOME_UNKNOWN: Handling.RETRY,
        TARGET_UNAVAILABLE: Handling.RETRY,
        REMOTE_IDENTITY_MISSING: Handling.NEEDS_EYES,
        REMOTE_VERSION_CONFLICT: Handling.NEEDS_EYES,
        REMOTE_OBJECT_HELD: Handling.NEEDS_EYES,
        "revise_hook": Handling.FAIL,
        "RecursionError": Handling.NEEDS_EYES,
    }


def test_hook_timeouts_are_retried_and_the_spent_budget_names_them() -> None:
    """hook_timeout on every attempt: retried, then exhausted with hook_timeout as the cause."""
    h = Harness(policy=policy(retry=RetryPolicy(max_attempts=2, base_delay=1.0)))
    h.discover()
    h.claim()
    fail(h, HOOK_TIMEOUT, "the observe hook ran past its hook_timeout of 1 s")
    assert h.state is State.OBSERVING and h.events[-1].command == "retry"
    h.clock.now = h.it.next_eligible_at
    h.claim()
    fail(h, HOOK_TIMEOUT, "the observe hook ran past its hook_timeout of 1 s")
    assert h.state is State.EXHAUSTED
    account = h.it.doc("account")
    assert [(e["class"], e["outcome"]) for e in account["attempts"]] == [
        (HOOK_TIMEOUT, "retry"),
        (HOOK_TIMEOUT, "exhausted"),
    ]
    assert account["last_error"]["class"] == HOOK_TIMEOUT


def test_invalid_output_fails_the_item_on_its_first_attempt(h: Harness) -> None:
    """invalid_output is terminal: failed, with the failure's class and message."""
    h.discover()
    h.claim()
    fail(h, INVALID_OUTPUT, "$.observe.data: depth: nested deeper than 64")
    assert h.state is State.FAILED
    assert h.it.doc("failure")["class"] == INVALID_OUTPUT


def test_an_unclassified_exception_stops_for_a_person_with_its_real_class(h: Harness) -> None:
    """A class no rule knows (an exception a hook raised): exception, the attempt logged under
    that class, the why naming it."""
    h.discover()
    h.claim()
    fail(h, "RecursionError", "maximum recursion depth exceeded")
    assert h.state is State.EXCEPTION
    assert h.events[-1].command == "needs_eyes"
    stopped = h.it.doc("exception")
    assert stopped["why"] == "RecursionError: maximum recursion depth exceeded"
    assert stopped["owner"] == "operators"
    entry = h.it.attempt_log[-1]
    assert (entry["class"], entry["outcome"]) == ("RecursionError", "stopped")


@pytest.mark.parametrize(
    "cls", [REMOTE_IDENTITY_MISSING, REMOTE_VERSION_CONFLICT, REMOTE_OBJECT_HELD]
)
def test_a_missing_or_changed_remote_object_stops_a_delivery_and_fails_a_revision(
    cls: str,
) -> None:
    """The same class, two rules: a delivery stops in exception, a revision fails."""
    delivery = Harness()
    delivery.to_approved()
    delivery.execute()
    delivery.claim()
    delivery.stage([art("a")])
    fail(delivery, cls)
    assert delivery.state is State.EXCEPTION

    revision = Harness()
    revision.to(State.REVISION_PREPARED)
    revision.claim()
    fail(revision, cls)
    assert revision.state is State.REVISION_FAILED
    assert list(revision.it.doc("revision")["failure"]["reasons"]) == [cls]
