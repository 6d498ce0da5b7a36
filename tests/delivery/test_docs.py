"""docs/delivery.md stays true to the code: its diagram, its crash points, its reason codes."""

from __future__ import annotations

import re
from pathlib import Path

from stopline.core.reasons import Reason
from stopline.core.transitions import mermaid
from stopline.runtime.crash_points import BOUNDARIES

DOC = Path(__file__).resolve().parents[2] / "docs" / "delivery.md"


def test_the_state_diagram_is_the_transition_table() -> None:
    """The Mermaid block of docs/delivery.md is exactly ``mermaid()`` of the table."""
    blocks = re.findall(r"```mermaid\n(.*?)\n```", DOC.read_text("utf-8"), re.S)
    assert blocks == [mermaid()]


def test_every_crash_point_and_revision_reason_is_documented() -> None:
    """Each name in BOUNDARIES has a row, and each revision reason code is explained."""
    text = DOC.read_text("utf-8")
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", text, re.M))
    assert set(BOUNDARIES) <= rows
    for reason in (
        Reason.MODE_FORBIDS_REVISION,
        Reason.PUBLISHED,
        Reason.ARTIFACT_NOT_BOUND,
        Reason.READBACK_UNVERIFIED,
        Reason.REVIEW_HEAD_MOVED,
        Reason.REVISION_ACTIVE,
        Reason.SCOPE_INVALID,
        Reason.CONTENT_UNCHANGED,
        Reason.QA_UNCHANGED,
        Reason.NOT_AN_UPDATE,
        Reason.READBACK_MISMATCH,
        Reason.REVIEW_PACKET_STALE,
        Reason.REMOTE_IDENTITY_MISSING,
        Reason.PUBLICATION_GUARD,
        Reason.REQUEST_MISMATCH,
        Reason.ALREADY_COMPLETED,
    ):
        assert f"`{reason.value}`" in text, reason
