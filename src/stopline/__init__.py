"""stopline: a fail-closed controller for recurring automations.

The public API is what this module exports (``__all__``, the names the README and the docs
use, pinned by ``tests/test_public_api.py``), the target adapters of
:mod:`stopline.targets` and the approval guard of :mod:`stopline.agents`. Every other module is internal: ``dir(stopline)`` does not list them,
and they may change without notice.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names, for type checkers; at run time each is imported when first used
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


# Where each public name lives. ``import stopline`` imports none of them: the command line
# starts without the controller, the runtime and the store, and a name is imported on first use.
_HOME = {
    "AgentAutomation": "runtime.automation",
    "App": "runtime.automation",
    "ApprovalPolicy": "core.policy",
    "ApprovalRule": "core.policy",
    "Artifact": "core.artifacts",
    "Asset": "core.artifacts",
    "Automation": "runtime.automation",
    "Controller": "controller",
    "Decision": "core.decision",
    "Deliver": "runtime.outcomes",
    "DeliveryPolicy": "core.policy",
    "Discovered": "runtime.automation",
    "Evidence": "runtime.outcomes",
    "Fail": "runtime.outcomes",
    "HookContext": "runtime.automation",
    "NeedsEyes": "runtime.outcomes",
    "NothingToDo": "runtime.outcomes",
    "Outcome": "core.decision",
    "Proposal": "runtime.outcomes",
    "QAResult": "core.commands",
    "Reason": "core.reasons",
    "ReportForReview": "runtime.outcomes",
    "RetryLater": "runtime.outcomes",
    "RetryPolicy": "core.policy",
    "State": "core.states",
    "TerminalError": "runtime.outcomes",
    "TransientError": "runtime.outcomes",
    "open_store": "store",
    "period_key": "runtime.periods",
    "run": "runtime.runner",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """``dir(stopline)``: the public API, not the submodules imported along the way."""
    return sorted(__all__)
