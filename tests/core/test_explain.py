"""core/explain.py: refusals that explain themselves (pure: item, command, reasons, context)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from stopline.core.approval_outlook import approval_outlook
from stopline.core.commands import Approve, Close, Edit, Observed, ReadBack, Reconcile
from stopline.core.explain import Case, explain
from stopline.core.policy import ApprovalPolicy, ApprovalRule, Policy
from stopline.core.proposal_diff import diff_lines, matching, proposal_diff
from stopline.core.reason_meanings import MEANINGS
from stopline.core.reasons import Reason

from .helpers import Harness, art

TWO = Policy(approval=ApprovalPolicy(default=ApprovalRule(roles=("approver",), approvals=2)))


def two_approvers() -> Harness:
    h = Harness(policy=TWO)
    h.to_awaiting()
    return h


def case(h: Harness, command: object, *reasons: str, proposals: tuple = ()) -> Case:  # type: ignore[type-arg]
    return Case(h.item, command, reasons, h.ctx(), "auto/k1", proposals)  # type: ignore[arg-type]


def test_every_reason_code_has_a_meaning() -> None:
    """MEANINGS names every reason code, and nothing else (docs/cli.md lists them from it)."""
    assert set(MEANINGS) == set(Reason)
    assert all(text and not text.endswith(".") for text in MEANINGS.values())


def test_the_outlook_names_who_may_still_approve_and_who_may_not() -> None:
    """After carol's edit she is excluded as an editor; the proposer-named actor too; a revoked
    actor is neither; alice and bob may still approve two of two."""
    h = two_approvers()
    h.ok(Edit("carol", {"grace": 9}))
    seen = approval_outlook(h.it.doc("proposal"), h.actors)
    assert seen.eligible == ("alice", "bob")
    assert seen.excluded == {"automation:auto": "proposed it", "carol": "edited it"}
    assert seen.satisfiable and seen.missing == 2


def test_an_outlook_with_too_few_eligible_approvers_cannot_be_satisfied() -> None:
    """With bob revoked, one eligible approver is left for two approvals: never approvable."""
    h = two_approvers()
    h.ok(Edit("carol", {"grace": 9}))
    h.actors["bob"] = replace(h.actors["bob"], active=False)
    seen = approval_outlook(h.it.doc("proposal"), h.actors)
    assert seen.eligible == ("alice",) and not seen.satisfiable
    assert "can never be approved" in seen.sentence() and "carol edited it" in seen.sentence()


def test_an_approval_given_counts_and_its_giver_is_not_eligible_again() -> None:
    """alice's approval holds: one more is missing and bob (not alice) may give it."""
    h = two_approvers()
    h.approve("alice")
    seen = approval_outlook(h.it.doc("proposal"), h.actors)
    assert seen.given == ("alice",) and seen.missing == 1 and "alice" not in seen.eligible


def test_not_authorized_names_the_roles_and_who_holds_them() -> None:
    """actor_not_authorized: the roles the approval needs, who holds them, what the actor holds."""
    h = two_approvers()
    found = explain(case(h, Approve("olivia", h.digest()), Reason.ACTOR_NOT_AUTHORIZED))
    [line] = found.sentences
    assert "needs one of the roles approver" in line
    assert "alice, automation:auto, bob and carol" in line and "olivia holds operator" in line


def test_self_approval_says_who_edited_and_flags_an_unsatisfiable_proposal() -> None:
    """carol edited and may not approve; the explanation says so and adds the outlook."""
    h = two_approvers()
    h.ok(Edit("carol", {"grace": 9}))
    h.actors["bob"] = replace(h.actors["bob"], active=False)
    found = explain(case(h, Approve("carol", h.digest()), Reason.SELF_APPROVAL))
    assert found.sentences[0].startswith("self_approval: carol edited it")
    assert "can never be approved" in found.sentences[-1]
    assert found.details["approvals"]["satisfiable"] is False


def test_a_stale_digest_is_explained_with_a_field_by_field_diff() -> None:
    """Approving the digest an edit replaced: the details hold the changed fields."""
    h = two_approvers()
    old = h.it.doc("proposal")
    h.ok(Edit("carol", {"grace": 9}))
    current = h.it.doc("proposal")
    found = explain(
        case(
            h,
            Approve("alice", old["digest"][:12]),
            Reason.PROPOSAL_DIGEST_MISMATCH,
            proposals=(current, h.it.doc("previous_proposal")),
        )
    )
    assert "edited by carol" in found.sentences[0]
    fields = [d["field"] for d in found.details["diff"]]
    assert fields[:1] == ["params.grace"] and "edited_by" in fields
    assert diff_lines(found.details["diff"])[0] == "params.grace: 5 -> 9"


def test_a_digest_no_proposal_held_is_not_invented() -> None:
    """A digest that names no proposal the item holds: no diff, and a pointer to `show`."""
    h = two_approvers()
    found = explain(
        case(h, Approve("alice", "f" * 64), Reason.PROPOSAL_DIGEST_MISMATCH, proposals=())
    )
    assert "diff" not in found.details and "stopline show" in found.sentences[0]


def test_unknown_item_and_illegal_transition_say_what_applies() -> None:
    """unknown_item names the reference; illegal_transition says where the command applies and
    what a person may do from the item's state."""
    h = two_approvers()
    missing = explain(Case(None, Close("olivia", "x"), ("unknown_item",), h.ctx(), "itm_nope"))
    assert "there is no item itm_nope" in missing.sentences[0]
    h.ok(Close("olivia", "done"))
    found = explain(case(h, Close("olivia", "again"), Reason.ILLEGAL_TRANSITION))
    assert "final" in found.sentences[0] and "closed" in found.sentences[0]


def test_a_prefix_matches_only_when_long_enough_and_unique() -> None:
    """matching(): 12 characters or more, exactly one proposal."""
    a, b = {"digest": "abcdef0123456789" + "0" * 48}, {"digest": "abcdef0123459999" + "0" * 48}
    assert matching("abcdef012345", [a, b]) is None  # both
    assert matching("abcdef0123456", [a, b]) is a
    assert matching("abcdef01234", [a]) is None  # too short


PARAMS = st.dictionaries(
    st.text("abcxyz", min_size=1, max_size=3),
    st.integers(-3, 3) | st.text("ab", max_size=2),
    min_size=1,
    max_size=5,
)


@given(PARAMS, PARAMS)
def test_the_diff_names_exactly_the_parameters_that_differ(a: dict, b: dict) -> None:  # type: ignore[type-arg]
    """Every changed, added or removed parameter is one line, and nothing else is."""
    diff = proposal_diff({"params": a, "action": "x"}, {"params": b, "action": "x"})
    expected = {f"params.{k}" for k in set(a) | set(b) if a.get(k, object) != b.get(k, object)}
    assert {d["field"] for d in diff} == expected
    assert proposal_diff({"params": a}, {"params": a}) == []


def test_the_prefix_length_is_the_one_the_fields_enforce() -> None:
    """The core's MIN_PREFIX and the digest field's minimum length are the same number."""
    from stopline.commands.fields import DIGEST, MIN_DIGEST_PREFIX
    from stopline.core.proposal_diff import MIN_PREFIX

    assert MIN_PREFIX == MIN_DIGEST_PREFIX == DIGEST.min_length


def test_a_refused_reconcile_names_the_fields_the_found_object_differs_in() -> None:
    """readback_mismatch on a reconcile: which fields of the found object are not what was
    sent (in the sentence and as ``details.fields``); nothing found: nothing to bind."""
    h = Harness()
    h.to_pending_readback([art("a")])
    h.claim()
    h.ok(ReadBack(**h.lease(), readbacks={"a": Observed(None)}))
    other = Reconcile("olivia", "a", Observed("e" * 64, "v2", ("title", "body")), remote_id="r9")
    found = explain(case(h, other, Reason.READBACK_MISMATCH))
    assert found.sentences == (
        "readback_mismatch: the object found for a (r9) holds content stopline did not send:"
        " it differs in title, body; it was not bound",
    )
    assert found.to_plain()["details"] == {"fields": ["title", "body"]}
    same_fields = Reconcile("olivia", "a", Observed("e" * 64), remote_id="r9")
    assert (
        "differs in no field compared"
        in explain(case(h, same_fields, Reason.READBACK_MISMATCH)).sentences[0]
    )
    nothing = explain(case(h, Reconcile("olivia", "a"), Reason.REMOTE_IDENTITY_MISSING))
    assert nothing.sentences == (
        "remote_identity_missing: the target holds no object under the idempotency key of a,"
        " so there is nothing to bind (reconcile never creates)",
    )
    gone = explain(case(h, Close("olivia", "why"), Reason.REMOTE_IDENTITY_MISSING))
    assert gone.sentences == (f"remote_identity_missing: {MEANINGS['remote_identity_missing']}",)
