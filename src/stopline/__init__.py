"""stopline: a fail-closed controller for recurring automations.

The public API is what this module exports (pinned by ``tests/test_public_api.py``).
"""

from __future__ import annotations

from .controller import Controller
from .core.artifacts import Artifact, Asset
from .core.commands import QAResult
from .core.decision import Decision, Outcome
from .core.policy import ApprovalPolicy, ApprovalRule, DeliveryPolicy, Policy, RetryPolicy
from .core.reasons import Reason
from .core.states import State, StateClass
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
    "Policy",
    "Proposal",
    "QAResult",
    "Reason",
    "ReportForReview",
    "RetryLater",
    "RetryPolicy",
    "State",
    "StateClass",
    "TerminalError",
    "TransientError",
    "open_store",
    "period_key",
    "run",
]
