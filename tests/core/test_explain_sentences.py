"""core/explain.py, sentence by sentence: each reason code's sentence names the specifics of
its case (the ages, the roles and who holds them, the versions, the times), and the outlook of
an approval is added only where it says something the sentences do not."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from stopline.core.commands import Approve, Close, Command, Edit, ReadBack
from stopline.core.explain import Case, explain, roles_needed
from stopline.core.frozen import freeze
from stopline.core.reason_meanings import MEANINGS
from stopline.core.reasons import Reason
from stopline.core.records import Item
from stopline.core.rights import participant_roles
from stopline.core.step import Context
from stopline.core.transitions import Cmd

from .helpers import T0, Harness, policy


def awaiting(approvals: int = 1) -> Harness:
    h = Harness(policy=policy(approvals=approvals))
    h.to_awaiting()
    return h


def said(h: Harness, command: Command, *reasons: str, item: Item | None = None, **ctx: Any) -> str:
    """The one sentence of a refusal of ``command`` for ``reasons`` (the context's ``now`` and
    ``policy`` as given)."""
    context = Context(ctx.get("now", h.clock.now), ctx.get("policy", h.policy), h.actors)
    found = explain(Case(item or h.it, command, reasons, context, ""))
    return "\n".join(found.sentences)


def with_proposal(item: Item, **changes: Any) -> Item:
    """``item`` whose proposal differs in ``changes`` (``None``: no proposal at all)."""
    data = dict(item.data)
    if changes.get("proposal", True) is None:
        data.pop("proposal")
    else:
        data["proposal"] = {**item.doc("proposal"), **changes}
    return replace(item, data=freeze(data))


@pytest.mark.parametrize(
    ("seconds", "age"),
    [
        (0, "0 s"),
        (59, "59 s"),
        (60, "1 min"),
        (3599, "59 min"),
        (3600, "1 h"),
        (2 * 3600 + 300, "2 h"),
        (86399, "23 h"),
        (86400, "1 d"),
        (3 * 86400 + 7200, "3 d"),
    ],
)
def test_the_evidence_age_is_written_in_its_largest_whole_unit(seconds: int, age: str) -> None:
    """evidence_stale: when the evidence was observed, how long ago, and the rule's limit
    (3600 s: one hour), each in its largest whole unit."""
    h = awaiting()
    line = said(
        h, Approve("alice", h.digest()), Reason.EVIDENCE_STALE, now=T0 + timedelta(seconds=seconds)
    )
    assert line == (
        "evidence_stale: the evidence was observed at 2026-03-01T12:00:00.250000Z"
        f" ({age} ago) and this action's rule accepts at most 1 h: `stopline reinspect"
        ' auto-k1 --actor ACTOR --reason "..."` gathers fresh evidence and a new proposal'
    )


def test_an_evidence_time_never_reads_as_a_negative_age() -> None:
    """Evidence observed after the context's now (a clock behind another) reads 0 s, and a
    rule of under a minute reads in seconds."""
    h = awaiting()
    item = with_proposal(h.it, max_evidence_age=30)
    line = said(
        h,
        Approve("alice", h.digest()),
        Reason.EVIDENCE_STALE,
        item=item,
        now=T0 - timedelta(seconds=5),
    )
    assert "(0 s ago)" in line and "accepts at most 30 s" in line


def test_a_proposal_without_timed_evidence_says_to_gather_it() -> None:
    h = awaiting()
    item = with_proposal(h.it, evidence=[])
    assert said(h, Approve("alice", h.digest()), Reason.EVIDENCE_STALE, item=item) == (
        "evidence_stale: the proposal rests on no evidence with a time; gather it with reinspect"
    )


def test_an_unknown_actor_is_told_apart_from_a_revoked_one() -> None:
    h = awaiting()
    assert said(h, Approve("gone", h.digest()), Reason.ACTOR_UNKNOWN) == (
        "actor_unknown: the actor gone was revoked"
    )
    assert said(h, Approve("zed", h.digest()), Reason.ACTOR_UNKNOWN) == (
        "actor_unknown: no actor named zed is in the registry (`stopline actors list` shows who is)"
    )
    assert "no actor named alice" in said(h, Approve("alice", h.digest()), Reason.ACTOR_UNKNOWN)


def test_a_changed_policy_names_both_versions() -> None:
    h = awaiting()
    item = with_proposal(h.it, policy_version="0123456789abcdefXYZ")
    assert said(h, Approve("alice", h.digest()), Reason.POLICY_CHANGED, item=item) == (
        "policy_changed: the approval policy changed since this proposal was made (version"
        f" 0123456789ab… -> {h.policy.approval.version[:12]}…): `stopline reinspect auto-k1`"
        " makes a new proposal under the current rules"
    )


def test_an_approval_given_twice_says_when_the_first_was_given() -> None:
    """already_approved: the time of this actor's own approval, never another's."""
    h = awaiting(approvals=2)
    h.clock.advance(90)
    h.approve("alice")
    first = h.it.doc("proposal")["approvals"][0]["at"]
    assert said(h, Approve("alice", h.digest()), Reason.ALREADY_APPROVED) == (
        f"already_approved: alice approved this digest already at {first}"
    )
    assert said(h, Approve("bob", h.digest()), Reason.ALREADY_APPROVED) == (
        "already_approved: bob approved this digest already"
    )


def test_no_proposal_and_not_completed_name_the_state() -> None:
    h = Harness()
    h.discover()
    close = Close("olivia", "why")
    assert said(h, close, Reason.NO_PROPOSAL) == (
        "no_proposal: the item holds no proposal (it is observing)"
    )
    assert said(h, close, Reason.NOT_COMPLETED) == (
        f"not_completed: {MEANINGS[Reason.NOT_COMPLETED]} (the item is observing)"
    )


def test_other_codes_say_what_they_mean_and_an_unknown_code_is_named() -> None:
    h = awaiting()
    close = Close("olivia", "why")
    assert said(h, close, Reason.LEASE_LOST) == f"lease_lost: {MEANINGS[Reason.LEASE_LOST]}"
    assert said(h, close, "made_up_code") == "made_up_code: refused made_up_code"


def test_an_unknown_item_is_named_as_the_person_named_it_else_by_its_id() -> None:
    h = awaiting()
    close = Close("olivia", "why")
    named = explain(Case(h.it, close, (Reason.UNKNOWN_ITEM,), h.ctx(), "auto/k1"))
    assert named.sentences[0].startswith("unknown_item: there is no item auto/k1 (name one")
    unnamed = explain(Case(h.it, close, (Reason.UNKNOWN_ITEM,), h.ctx(), ""))
    assert unnamed.sentences[0].startswith("unknown_item: there is no item auto-k1 (name one")


def test_a_command_from_the_wrong_state_says_where_it_applies_and_what_may_be_done() -> None:
    """A read-back while the item awaits approval: where a read-back applies, and what a
    person may do from awaiting_approval (the transition table's people's commands)."""
    h = awaiting()
    line = said(h, ReadBack("w1", 1, {}), Reason.ILLEGAL_TRANSITION)
    assert line.startswith("illegal_transition: readback applies in ")
    assert "pending_readback" in line and "awaiting_approval" not in line.split(";")[0]
    assert line.endswith(
        "; this item is awaiting_approval (from awaiting_approval a person may approve,"
        " close, edit, reinspect, reject)"
    )


def test_not_authorized_says_what_the_actor_holds_or_that_it_holds_no_role() -> None:
    """nora holds no role; an operator's command names the operators; an approval names the
    action it would approve."""
    h = awaiting()
    assert said(h, Approve("nora", h.digest()), Reason.ACTOR_NOT_AUTHORIZED) == (
        "actor_not_authorized: approving restart needs one of the roles approver, held by"
        " alice, automation:auto, bob and carol; nora holds no role"
    )
    assert said(h, Close("alice", "why"), Reason.ACTOR_NOT_AUTHORIZED) == (
        "actor_not_authorized: close needs one of the roles operator, held by carol, olivia"
        " and pat; alice holds approver"
    )
    bare = with_proposal(h.it, proposal=None)
    assert said(h, Approve("nora", h.digest()), Reason.ACTOR_NOT_AUTHORIZED, item=bare) == (
        "actor_not_authorized: approve needs one of the roles (none), held by nobody;"
        " nora holds no role"
    )


def test_a_self_approval_names_the_proposer_and_no_editor() -> None:
    h = awaiting()
    line = explain(
        Case(h.it, Approve("automation:auto", h.digest()), (Reason.SELF_APPROVAL,), h.ctx())
    ).sentences[0]
    assert line == (
        "self_approval: automation:auto proposed it, and this rule keeps separation of duties:"
        " the proposer (automation:auto), every editor (none) and who sent it back may not"
        " approve"
    )


def test_a_digest_mismatch_without_a_proposal_says_so() -> None:
    h = awaiting()
    bare = with_proposal(h.it, proposal=None)
    found = explain(
        Case(bare, Approve("alice", "a" * 64), (Reason.PROPOSAL_DIGEST_MISMATCH,), h.ctx())
    )
    assert found.sentences == ("proposal_digest_mismatch: the item holds no proposal any more",)
    assert found.details == {}


def test_a_digest_of_the_current_proposal_names_both_prefixes_and_no_diff() -> None:
    """The digest matched is the current proposal's own (the proposal held twice): the
    sentence names the given and current digests by their first 16 characters, and the
    details hold the current digest and no diff."""
    h = awaiting()
    current = h.it.doc("proposal")
    given = "abcdef0123456789" + "9" * 48
    found = explain(
        Case(
            h.it,
            Approve("alice", given),
            (Reason.PROPOSAL_DIGEST_MISMATCH,),
            h.ctx(),
            "",
            (current,),
        )
    )
    assert found.sentences[0].startswith(
        f"proposal_digest_mismatch: the digest you gave (abcdef0123456789…) is not the current"
        f" proposal's ({current['digest'][:16]}…), and stopline"
    )
    assert found.details["current_digest"] == current["digest"]
    assert "diff" not in found.details and "approved_digest" not in found.details
    same = explain(
        Case(
            h.it,
            Approve("alice", current["digest"]),
            (Reason.PROPOSAL_DIGEST_MISMATCH,),
            h.ctx(),
            "",
            (current,),
        )
    )
    assert "cannot show what changed" in same.sentences[0] and "diff" not in same.details


def test_a_changed_proposal_names_both_digests_and_whether_a_person_edited_it() -> None:
    h = awaiting(approvals=2)
    old = h.it.doc("proposal")
    h.ok(Edit("carol", {"grace": 9}))
    new = h.it.doc("proposal")
    found = explain(
        Case(
            h.it,
            Approve("alice", old["digest"]),
            (Reason.PROPOSAL_DIGEST_MISMATCH,),
            h.ctx(),
            "",
            (new, old),
        )
    )
    assert found.sentences[0] == (
        f"proposal_digest_mismatch: the proposal changed after you read it"
        f" ({old['digest'][:16]}… -> {new['digest'][:16]}…, edited by carol); changed:"
        f" {', '.join(d['field'] for d in found.details['diff'])}"
    )
    assert found.details["approved_digest"] == old["digest"]
    assert found.details["current_digest"] == new["digest"]
    unedited = with_proposal(h.it, edited_by=None)
    line = explain(
        Case(
            unedited,
            Approve("alice", old["digest"]),
            (Reason.PROPOSAL_DIGEST_MISMATCH,),
            h.ctx(),
            "",
            (new, old),
        )
    ).sentences[0]
    assert "…); changed:" in line and "edited by" not in line.split(";")[0]


def test_the_outlook_is_added_only_when_it_says_more() -> None:
    """An approval that can still be given: the outlook is in the details, not a sentence; a
    command that is not about approving has no outlook at all."""
    h = awaiting()
    found = explain(
        Case(h.it, Approve("nora", h.digest()), (Reason.ACTOR_NOT_AUTHORIZED,), h.ctx())
    )
    assert len(found.sentences) == 1
    assert found.details["approvals"]["satisfiable"] is True
    closing = explain(Case(h.it, Close("alice", "why"), (Reason.ACTOR_NOT_AUTHORIZED,), h.ctx()))
    assert "approvals" not in closing.details and len(closing.sentences) == 1
    gone = dict(h.actors)
    for name in ("alice", "bob", "carol", "automation:auto"):
        gone[name] = replace(gone[name], active=False)
    lonely = explain(
        Case(
            h.it,
            Approve("nora", h.digest()),
            (Reason.ACTOR_NOT_AUTHORIZED,),
            Context(h.clock.now, h.policy, gone),
        )
    )
    assert len(lonely.sentences) == 2 and "can never be approved" in lonely.sentences[1]


def test_the_roles_needed_follow_each_command_s_authority() -> None:
    """approve: the proposal's roles; reject: those or the operator role; publish: the
    delivery policy's publish roles; finalize: none; a note: any role with a right on the
    item; without a policy, publish needs nothing a person could hold and a note the operator
    role."""
    h = awaiting()
    item, ctx = h.it, h.ctx()
    assert roles_needed(item, Cmd.APPROVE, ctx) == {"approver"}
    assert roles_needed(item, Cmd.REJECT, ctx) == {"approver", "operator"}
    assert roles_needed(item, Cmd.PUBLISH, ctx) == {"publisher"}
    assert roles_needed(item, Cmd.FINALIZE, ctx) == frozenset()
    assert roles_needed(item, Cmd.NOTE, ctx) == participant_roles(item, h.policy)
    assert "operator" in roles_needed(item, Cmd.NOTE, ctx)
    assert roles_needed(item, Cmd.CLOSE, ctx) == {"operator"}
    bare = Context(h.clock.now, None, h.actors)
    assert roles_needed(item, Cmd.PUBLISH, bare) == frozenset()
    assert roles_needed(item, Cmd.NOTE, bare) == {"operator"}


def test_a_state_only_workers_move_is_not_called_final() -> None:
    """observing has no people's commands but is not final: the sentence says where the
    command applies and offers no choice."""
    h = Harness()
    h.discover()
    line = said(h, Close("olivia", "why"), Reason.ILLEGAL_TRANSITION)
    assert "final" not in line and "a person may" not in line
    assert line.endswith("; this item is observing")
