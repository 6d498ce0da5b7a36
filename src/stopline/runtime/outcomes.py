"""What hooks return: typed outcomes, one per way a step can end.

========================  =====================================  =======================
hook                      may return                             the item then goes to
========================  =====================================  =======================
``observe``               :class:`Evidence`                      ``classified``
``propose``               :class:`Proposal`                      ``awaiting_approval``
                                                                 (or ``approved`` when its
                                                                 rule needs no approval)
``propose``               :class:`ReportForReview`               ``ready_for_review``
``propose``               :class:`NothingToDo`                   ``completed`` (no approval,
                                                                 no delivery)
``execute``               :class:`Deliver`                       ``delivering`` continues
any hook                  :class:`NeedsEyes`                     ``exception``
any hook                  :class:`RetryLater`                    same step, later (budget)
any hook                  :class:`Fail`                          ``failed``
========================  =====================================  =======================

A hook may also raise: an exception of the automation's ``retry_on`` classes is a retryable
failure, one of ``terminal_on`` a terminal one, and anything else stops the item in
``exception`` ("needs eyes"): an unknown failure is never retried blind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..core.artifacts import Artifact


@dataclass(frozen=True)
class Evidence:
    data: Mapping[str, Any]
    observed_at: datetime | None = None  # defaults to the context's clock
    classification: Any = None


@dataclass(frozen=True)
class Proposal:
    action: str
    params: Mapping[str, Any]
    target: str = ""
    rationale: str = ""
    # How urgent (info, low, normal, high, critical); None: the automation's ``severity``.
    # It orders the inbox and decides nothing.
    severity: str | None = None


@dataclass(frozen=True)
class ReportForReview:
    report: Mapping[str, Any]


@dataclass(frozen=True)
class NothingToDo:
    """The evidence shows nothing to act on: the item completes with its evidence and this
    reason, without a proposal, an approval or a delivery (a recurring check that found all
    well)."""

    reason: str


@dataclass(frozen=True)
class NeedsEyes:
    why: str
    owner: str = "operators"
    evidence: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RetryLater:
    message: str
    failure_class: str = "transient"


@dataclass(frozen=True)
class Fail:
    message: str
    failure_class: str = "terminal"


@dataclass(frozen=True)
class Deliver:
    """Artifacts to deliver to the automation's target (none for an action with no object)."""

    artifacts: Sequence[Artifact] = ()
    result: Mapping[str, Any] = field(default_factory=dict)


class TransientError(Exception):
    """Raise from a hook for a failure that is plausibly temporary (retried within budget)."""


class TerminalError(Exception):
    """Raise from a hook for a failure no retry can fix."""
