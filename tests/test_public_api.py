"""The public API is exactly what ``stopline.__all__`` lists."""

import stopline

EXPECTED = {
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
}


def test_exported_members() -> None:
    """Adding or removing a public name is a deliberate change to this list."""
    assert set(stopline.__all__) == EXPECTED
    for name in EXPECTED:
        assert getattr(stopline, name) is not None
