"""From a hook's outcome to the worker command that records it: one table.

========================  ===========================  ====================================
outcome                   may come from                command
========================  ===========================  ====================================
``Evidence``              ``observe``                  ``Observe``
``Proposal``              ``propose``                  ``Propose``
``ReportForReview``       ``propose``                  ``Report``
``NothingToDo``           ``propose``                  ``NothingToDo``
``NeedsEyes``             any hook                     ``NeedsEyes``
``RetryLater``            any hook                     ``Failure`` (retryable)
``Fail``                  any hook                     ``Failure`` (terminal)
``HookFailed``            any hook (raised, timed      ``Failure`` (the rules of
                          out, invalid output)         ``core/failures.py`` decide)
========================  ===========================  ====================================

``Deliver`` (from ``execute``) is not one command: the delivery driver stages and writes its
artifacts. Anything else a hook returns stops the item in ``exception`` for a person.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core.commands import Command, Failure, Observe, Propose, Report
from ..core.commands import NeedsEyes as NeedsEyesCommand
from ..core.commands import NothingToDo as NothingToDoCommand
from .hook_output import type_name
from .hooks import HookFailed
from .outcomes import (
    Evidence,
    Fail,
    NeedsEyes,
    NothingToDo,
    Proposal,
    ReportForReview,
    RetryLater,
)

OPERATORS = "operators"


@dataclass(frozen=True)
class Signature:
    """What every worker command carries (the worker and its lease's fencing token), and the
    readings a command may need: the step's clock, and where a failure draws the jitter
    sample of its retry delay."""

    worker: str
    token: int
    now: datetime
    jitter: Callable[[], float]
    severity: str | None = None  # the automation's default severity of a proposal

    def lease(self) -> dict[str, Any]:
        return {"worker": self.worker, "token": self.token}


def _observe(outcome: Evidence, signature: Signature) -> Command:
    return Observe(
        **signature.lease(),
        evidence=dict(outcome.data),
        observed_at=outcome.observed_at or signature.now,
        classification=outcome.classification,
    )


def _propose(outcome: Proposal, signature: Signature) -> Command:
    return Propose(
        **signature.lease(),
        action=outcome.action,
        target=outcome.target,
        params=dict(outcome.params),
        rationale=outcome.rationale,
        severity=outcome.severity or signature.severity,
    )


def _report(outcome: ReportForReview, signature: Signature) -> Command:
    return Report(**signature.lease(), report=dict(outcome.report))


def _nothing_to_do(outcome: NothingToDo, signature: Signature) -> Command:
    return NothingToDoCommand(**signature.lease(), reason=outcome.reason)


def _needs_eyes(outcome: NeedsEyes, signature: Signature) -> Command:
    return NeedsEyesCommand(
        **signature.lease(), owner=outcome.owner, why=outcome.why, evidence=dict(outcome.evidence)
    )


def _retry_later(outcome: RetryLater, signature: Signature) -> Command:
    return failure(outcome.failure_class, outcome.message, signature, retryable=True)


def _fail(outcome: Fail, signature: Signature) -> Command:
    return failure(outcome.failure_class, outcome.message, signature, retryable=False)


def _hook_failed(outcome: HookFailed, signature: Signature) -> Command:
    return failure(
        outcome.failure_class,
        outcome.message,
        signature,
        retryable=outcome.retryable,
        traceback=outcome.traceback,
    )


def failure(
    failure_class: str,
    message: str,
    signature: Signature,
    *,
    retryable: bool | None = None,
    traceback: str | None = None,
) -> Command:
    return Failure(
        **signature.lease(),
        failure_class=failure_class,
        message=message,
        retryable=retryable,
        traceback=traceback,
        jitter_sample=signature.jitter(),
    )


COMMANDS: dict[type, Callable[[Any, Signature], Command]] = {
    Evidence: _observe,
    Proposal: _propose,
    ReportForReview: _report,
    NothingToDo: _nothing_to_do,
    NeedsEyes: _needs_eyes,
    RetryLater: _retry_later,
    Fail: _fail,
    HookFailed: _hook_failed,
}
EVERY_HOOK: tuple[type, ...] = (NeedsEyes, RetryLater, Fail, HookFailed)
MAY_RETURN: dict[str, tuple[type, ...]] = {
    "observe": (Evidence, *EVERY_HOOK),
    "propose": (Proposal, ReportForReview, NothingToDo, *EVERY_HOOK),
    "execute": EVERY_HOOK,  # and Deliver, which the delivery driver takes
}


def command_for(hook: str, outcome: Any, signature: Signature) -> Command:
    """The command that records ``outcome`` of ``hook``."""
    if isinstance(outcome, MAY_RETURN[hook]):
        build = next(COMMANDS[t] for t in type(outcome).__mro__ if t in COMMANDS)
        return build(outcome, signature)
    why = f"{hook} hook returned {type_name(outcome)}, which it may not return"
    return NeedsEyesCommand(**signature.lease(), owner=OPERATORS, why=why)
