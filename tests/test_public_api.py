"""The public API is exactly what ``stopline.__all__`` lists: the names the README and the docs
use, and nothing else shows."""

import re
from pathlib import Path

import stopline

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = "\n".join(path.read_text() for path in sorted((ROOT / "docs").glob("*.md")))
# The modules a user imports from: the package itself, the target adapters and the agent guard.
PUBLIC_MODULES = re.compile(r"stopline(\.targets(\.\w+)?|\.agents)?")

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
}


def test_exported_members() -> None:
    """Adding or removing a public name is a deliberate change to this list."""
    assert set(stopline.__all__) == EXPECTED
    for name in EXPECTED:
        assert getattr(stopline, name) is not None


def test_import_stopline_shows_only_the_public_api() -> None:
    """``dir(stopline)`` lists the public names, not the submodules imported on the way."""
    assert dir(stopline) == sorted(stopline.__all__)
    assert "controller" not in dir(stopline) and "core" not in dir(stopline)


def test_every_public_name_is_documented_and_every_documented_import_is_public() -> None:
    """Each name of ``__all__`` is used by the README or the docs; what they import comes from
    ``stopline`` (a name of ``__all__``) or ``stopline.targets``, never an internal module."""
    text = README + DOCS
    assert [n for n in stopline.__all__ if not re.search(rf"\b{n}\b", text)] == []
    imports = re.findall(r"from (stopline[\w.]*) import \(?([\w,\s]+?)\)?\n(?!\s)", text)
    assert imports, "the README imports from stopline"
    for module, names in imports:
        assert PUBLIC_MODULES.fullmatch(module), f"the docs import from internal {module}"
        if module == "stopline":
            listed = {n.strip() for n in names.split(",") if n.strip()}
            assert listed <= set(stopline.__all__), listed - set(stopline.__all__)
