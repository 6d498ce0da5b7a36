"""Failures a worker records, and what each one does to the item.

A worker reports a failure as a :class:`~stopline.core.commands.Failure`: a class (a short code
such as ``target_unavailable``, or the name of the exception a hook raised) and a message. What
happens next is decided here, in one place, whoever reported it:

* ``retry``: the same step again after the policy's delay, while the budget lasts; a spent
  budget moves the item to ``exhausted`` with an account that names this failure;
* ``fail``: ``failed``, a terminal state, with the failure as its evidence;
* ``needs_eyes``: ``exception``, a stop state a person leaves (``resolve``, ``reinspect``).

A hook's own outcome says which it is (``RetryLater`` / ``Fail``, or an exception of the
automation's ``retry_on`` / ``terminal_on``): the command's ``retryable`` is then ``True`` or
``False``. Every other failure leaves ``retryable`` unset and follows :data:`RULES`; a class the
rules do not know (an exception nobody classified) stops the item for a person, because an
unknown failure is never retried blind. In a revision every failure fails the revision
(``revision_failed``), which only the same request resumes.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from .canonical import format_time
from .commands import Failure
from .decision import Decision, refused
from .limits import truncate_traceback
from .reasons import Reason
from .records import Item
from .states import State
from .step import Context, lease_reasons, policy_of, transition
from .transitions import Cmd


class Handling(StrEnum):
    RETRY = "retry"
    FAIL = "fail"
    NEEDS_EYES = "needs_eyes"


# The failure classes the worker itself reports.
HOOK_TIMEOUT = "hook_timeout"  # a hook ran past its automation's hook_timeout and was abandoned
INVALID_OUTPUT = "invalid_output"  # a hook's output breaks the input limits or its shape
OUTCOME_UNKNOWN = "outcome_unknown"  # a remote call may or may not have taken effect
TARGET_UNAVAILABLE = Reason.TARGET_UNAVAILABLE.value  # the target refused or failed the call
REMOTE_IDENTITY_MISSING = Reason.REMOTE_IDENTITY_MISSING.value  # a bound object is gone
REMOTE_VERSION_CONFLICT = Reason.REMOTE_VERSION_CONFLICT.value  # someone else changed it
REVISE_HOOK = "revise_hook"  # the revise hook failed (raised, or returned a failure)
REMOTE_OBJECT_HELD = Reason.REMOTE_OBJECT_HELD.value  # another artifact holds the object
NEEDS_EYES = "needs_eyes"  # a hook returned NeedsEyes

MAX_CLASS = 100  # characters of a failure class kept in a record

RULES: dict[str, Handling] = {
    # the hook was abandoned before it answered; reading and proposing again is safe, and an
    # acting call is guarded again before it runs
    HOOK_TIMEOUT: Handling.RETRY,
    # the same hook on the same record would answer the same again
    INVALID_OUTPUT: Handling.FAIL,
    # the next attempt looks the object up by its idempotency key before it creates again
    OUTCOME_UNKNOWN: Handling.RETRY,
    TARGET_UNAVAILABLE: Handling.RETRY,
    # never recreated, never overwritten: a person decides (reconcile, resolve)
    REMOTE_IDENTITY_MISSING: Handling.NEEDS_EYES,
    REMOTE_VERSION_CONFLICT: Handling.NEEDS_EYES,
    # the object is another artifact's: binding or updating it would rewrite that one's
    REMOTE_OBJECT_HELD: Handling.NEEDS_EYES,
    REVISE_HOOK: Handling.FAIL,
}


def handling(failure_class: str, retryable: bool | None) -> Handling:
    """What a failure does outside a revision (see the module docstring)."""
    if retryable is not None:
        return Handling.RETRY if retryable else Handling.FAIL
    return RULES.get(failure_class, Handling.NEEDS_EYES)


def attempt_entry(
    item: Item, worker: str, now: datetime, failure_class: str, message: str, outcome: str
) -> dict[str, Any]:
    """One entry of the item's attempt log: the attempt, how it ended, and why."""
    return {
        "attempt": item.attempts,
        "state": item.state.value,
        "claimed_at": None if item.claimed_at is None else format_time(item.claimed_at),
        "at": format_time(now),
        "worker": worker,
        "class": failure_class,
        "message": message[:500],
        "outcome": outcome,
    }


def account(item: Item, last: dict[str, Any] | None, now: datetime) -> dict[str, Any]:
    """The compact account an exhausted item carries."""
    step = item.doc("step") or {}
    since = step.get("since", "")
    entries = [dict(e) for e in item.attempt_log if e.get("state") == item.state.value]
    entries = [e for e in entries if (e.get("claimed_at") or e.get("at") or "") >= since]
    if last is not None:
        entries.append(last)
    last_error = next(
        ({"class": e["class"], "message": e["message"]} for e in reversed(entries)), None
    )
    evidence = item.doc("evidence") or {}
    return {
        "state": item.state.value,
        "attempts": entries,
        "attempt_count": item.attempts,
        "max_attempts": item.max_attempts,
        "last_error": last_error,
        "last_evidence_digest": evidence.get("digest"),
        "exhausted_at": format_time(now),
        "resume": {
            "condition": "an operator grants a new budget once the cause is fixed",
            "command": f"stopline resume {item.id} --actor ACTOR --reason REASON",
        },
    }


def stop_for_eyes(
    item: Item,
    ctx: Context,
    worker: str,
    *,
    owner: str,
    why: str,
    evidence: Any,
    failure_class: str = NEEDS_EYES,
) -> Decision:
    """``exception``: the step stops until a person looks (the attempt is logged as stopped)."""
    stopped = {
        "owner": owner,
        "why": why,
        "evidence": evidence,
        "from_state": item.state.value,
        "at": format_time(ctx.now),
    }
    return transition(
        item,
        Cmd.NEEDS_EYES,
        State.EXCEPTION,
        ctx,
        actor=worker,
        data={"exception": stopped},
        detail={"owner": owner, "why": why},
        attempt_entry=attempt_entry(item, worker, ctx.now, failure_class, why, "stopped"),
    )


def decide_failure(item: Item, command: Failure, ctx: Context) -> Decision:
    reasons = lease_reasons(item, command, ctx.now)
    if not item.state.is_work:
        reasons.insert(0, Reason.ILLEGAL_TRANSITION)
    if reasons:
        return refused(item, reasons)
    policy = policy_of(ctx)
    # a class is a short code: a hook's own (RetryLater, Fail) kept as short as a raised one's
    cls, worker = command.failure_class[:MAX_CLASS], command.worker
    failure: dict[str, Any] = {"class": cls, "message": command.message[:500]}
    trace = None if not command.traceback else truncate_traceback(command.traceback)
    traced = failure if trace is None else {**failure, "traceback": trace}
    if item.state is State.REVISION_PREPARED:
        entry = attempt_entry(item, worker, ctx.now, cls, command.message, "revision_failed")
        return revision_failed(item, ctx, worker, (cls,), failure, entry)
    rule = handling(cls, command.retryable)
    if rule is Handling.NEEDS_EYES:
        why = f"{cls}: {command.message}"[:500]
        evidence = {} if trace is None else {"traceback": trace}
        return stop_for_eyes(
            item, ctx, worker, owner="operators", why=why, evidence=evidence, failure_class=cls
        )
    if rule is Handling.FAIL:
        return transition(
            item,
            Cmd.FAIL,
            State.FAILED,
            ctx,
            actor=worker,
            data={"failure": {**traced, "state": item.state.value, "at": format_time(ctx.now)}},
            detail=failure,
            attempt_entry=attempt_entry(item, worker, ctx.now, cls, command.message, "failed"),
        )
    if item.attempts >= item.max_attempts:
        entry = attempt_entry(item, worker, ctx.now, cls, command.message, "exhausted")
        return transition(
            item,
            Cmd.EXHAUST,
            State.EXHAUSTED,
            ctx,
            actor=worker,
            data={"account": account(item, entry, ctx.now), "resume_state": item.state.value},
            reasons=(Reason.RETRY_BUDGET_EXHAUSTED,),
            detail=traced,
            attempt_entry=entry,
        )
    delay = policy.retry_for(item.state.value).delay(item.attempts, command.jitter_sample)
    return transition(
        item,
        Cmd.RETRY,
        item.state,
        ctx,
        actor=worker,
        next_eligible_at=ctx.now + delay,
        detail={**traced, "attempt": item.attempts, "delay_seconds": delay.total_seconds()},
        attempt_entry=attempt_entry(item, worker, ctx.now, cls, command.message, "retry"),
    )


def revision_failed(
    item: Item,
    ctx: Context,
    actor: str,
    reasons: tuple[str, ...],
    failure: dict[str, Any],
    entry: dict[str, Any] | None,
) -> Decision:
    """``revision_failed``: the revision stops; only the same request resumes it."""
    revision = dict(item.doc("revision") or {})
    revision["state"] = State.REVISION_FAILED.value
    revision["failure"] = {**failure, "reasons": list(reasons), "at": format_time(ctx.now)}
    return transition(
        item,
        Cmd.REVISION_FAIL,
        State.REVISION_FAILED,
        ctx,
        actor=actor,
        data={"revision": revision},
        reasons=reasons,
        digests={"request": revision.get("request_digest")},
        detail=failure,
        attempt_entry=entry,
    )
