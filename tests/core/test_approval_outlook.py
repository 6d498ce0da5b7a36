"""core/approval_outlook.py and the diff's lines: who may still approve, why a role holder may
not, the sentence the inbox and `show` print, and long values cut to one line."""

from __future__ import annotations

from dataclasses import replace

import pytest

from stopline.core.approval_outlook import Outlook, approval_outlook, listed, why_excluded
from stopline.core.proposal_diff import diff_lines

from .helpers import Harness, policy


@pytest.mark.parametrize(
    ("names", "text"),
    [([], ""), (["a"], "a"), (["a", "b"], "a and b"), (["a", "b", "c"], "a, b and c")],
)
def test_names_are_listed_as_a_sentence_lists_them(names: list[str], text: str) -> None:
    assert listed(names) == text


def test_why_a_role_holder_may_not_approve() -> None:
    proposal = {
        "proposer": "pam",
        "edited_by": "eve",
        "editors": ["eve", "ed"],
        "returned_by": ["rex"],
    }
    assert why_excluded(proposal, "pam") == "proposed it"
    assert why_excluded(proposal, "eve") == "edited it"
    assert why_excluded(proposal, "ed") == "edited it"
    assert why_excluded({**proposal, "edited_by": None}, "eve") == "edited it"
    assert why_excluded({"editors": [], "edited_by": "eve"}, "eve") == "edited it"
    assert why_excluded(proposal, "rex") == "sent an earlier proposal back (reject --return)"
    assert why_excluded(proposal, "zed") == "may not approve it"
    assert why_excluded({}, "pam") == "may not approve it"


def test_the_sentence_says_enough_who_may_still_approve_or_that_none_can() -> None:
    enough = Outlook(2, ("alice", "bob"), ("carol",))
    assert enough.missing == 0 and enough.sentence() == "2 of 2 approvals hold: enough"
    over = Outlook(1, ("alice", "bob"), ())
    assert over.missing == 0 and over.satisfiable
    open_ = Outlook(2, ("alice",), ("bob", "carol"), {"pam": "proposed it"})
    assert open_.sentence() == (
        "1 of 2 approvals hold; bob and carol may still approve (pam proposed it)"
    )
    assert Outlook(1, (), ("bob",)).sentence() == "0 of 1 approvals hold; bob may still approve"
    one_short = Outlook(2, (), ("bob",), {"eve": "edited it", "ann": "proposed it"})
    assert not one_short.satisfiable
    assert one_short.sentence() == (
        "this proposal can never be approved: it needs 2 more approvals and only 1 eligible"
        " approver is left (bob may approve) (ann proposed it; eve edited it); add an approver"
        " or edit/reject it"
    )
    nobody = Outlook(3, ("alice", "bob"), ())
    assert nobody.sentence() == (
        "this proposal can never be approved: it needs 1 more approval and only 0 eligible"
        " approvers are left (nobody may approve); add an approver or edit/reject it"
    )
    assert nobody.to_plain() == {
        "required": 3,
        "given": ["alice", "bob"],
        "eligible": [],
        "excluded": {},
        "missing": 1,
        "satisfiable": False,
    }


def test_an_approval_of_another_digest_or_by_a_revoked_approver_does_not_hold() -> None:
    h = Harness(policy=policy(approvals=2))
    h.to_awaiting()
    h.approve("alice")
    proposal = h.it.doc("proposal")
    assert approval_outlook(proposal, h.actors).given == ("alice",)
    moved = {**proposal, "digest": "f" * 64}
    assert approval_outlook(moved, h.actors).given == ()
    revoked = {**h.actors, "alice": replace(h.actors["alice"], active=False)}
    seen = approval_outlook(proposal, revoked)
    assert seen.given == () and "alice" not in seen.eligible and seen.missing == 2


def test_a_long_value_is_cut_to_one_short_line() -> None:
    """Values up to 60 characters as they are (strings quoted); longer ones cut at 59 and an
    ellipsis; other values as JSON, non-ASCII kept."""
    exact = "x" * 58  # 60 with its quotes
    longer = "y" * 80
    [line] = diff_lines([{"field": "params.a", "before": exact, "after": longer}])
    assert line == f"params.a: '{exact}' -> '{('y' * 80)[:58]}…"
    assert len(line.split(" -> ")[1]) == 60
    [other] = diff_lines([{"field": "params.b", "before": {"k": "été"}, "after": None}])
    assert other == 'params.b: {"k": "été"} -> null'
