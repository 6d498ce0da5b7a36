"""stopline: a fail-closed controller for recurring automations.

The public API is what this module exports (``__all__``, the names the README and the docs
use, pinned by ``tests/test_public_api.py``), the target adapters of
:mod:`stopline.targets` and the approval guard of :mod:`stopline.agents`. Every other module is internal: ``dir(stopline)`` does not list them,
and they may change without notice.
"""

from __future__ import annotations

from .controller import Controller
from .core.artifacts import Artifact, Asset
from .core.commands import QAResult
from .core.decision import Decision, Outcome
from .core.policy import ApprovalPolicy, ApprovalRule, DeliveryPolicy, RetryPolicy
from .core.reasons import Reason
from .core.states import State
from .runtime.automation import AgentAutomation, App, Automation, Discovered, HookContext
from .runtime.outcomes import (
    Deliver,
    Evidence,
    Fail,
    NeedsEyes,
    NothingToDo,
    Proposal,
    ReportForReview,
    RetryLater,
    TerminalError,
    TransientError,
)
from .runtime.periods import period_key
from .runtime.runner import run
from .store import open_store

__version__ = "0.1.0"

__all__ = [
    "AgentAutomation",
    "App",
    "ApprovalPolicy",
    "ApprovalRule",
    "Artifact",
    "Asset",
    "Automation",
    "Controller",
    "Decision",
    "Deliver",
    "DeliveryPolicy",
    "Discovered",
    "Evidence",
    "Fail",
    "HookContext",
    "NeedsEyes",
    "NothingToDo",
    "Outcome",
    "Proposal",
    "QAResult",
    "Reason",
    "ReportForReview",
    "RetryLater",
    "RetryPolicy",
    "State",
    "TerminalError",
    "TransientError",
    "open_store",
    "period_key",
    "run",
]


def __dir__() -> list[str]:
    """``dir(stopline)``: the public API, not the submodules imported along the way."""
    return sorted(__all__)
