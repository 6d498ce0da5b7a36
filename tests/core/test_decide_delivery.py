"""decide() for delivery: stage, intent, bind, delivered, readback; review, publish, reconcile."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest

from stopline.core.commands import (
    Bind,
    Delivered,
    Intent,
    NeedsEyes,
    Observed,
    Publish,
    QAResult,
    ReadBack,
    Reconcile,
    Resolve,
    Review,
    Revise,
)
from stopline.core.decision import Outcome
from stopline.core.delivery_plan import written
from stopline.core.policy import PUBLISH, DeliveryPolicy
from stopline.core.states import State

from .helpers import Harness, art, bound_digests, policy, rid, unchanged

S = State


def delivering(h: Harness) -> Harness:
    h.to_approved()
    h.execute()
    h.claim()
    return h


def readback_missing(h: Harness) -> Harness:
    """A completed-looking delivery whose object vanished before readback: exception."""
    h.to_pending_readback([art("a")])
    h.claim()
    h.ok(ReadBack(**h.lease(), readbacks={"a": Observed(None)}), S.EXCEPTION)
    return h


def publishing() -> Harness:
    return Harness(policy=policy(delivery=DeliveryPolicy(mode=PUBLISH)))


def test_full_delivery_path_completes_with_a_review_packet(h: Harness) -> None:
    """stage -> intent -> bind -> delivered -> readback ends completed, every object bound."""
    a, b = art("a", "alpha"), art("b", "beta")
    delivering(h)
    token = h.it.lease_token
    d = h.stage([a, b])
    assert d.state is S.DELIVERING and h.it.lease_token == token and h.it.lease_owner == "w1"
    assert bound_digests(d.event) == {"a": a.content_hash, "b": b.content_hash}
    for x in (a, b):
        h.write(x.key)
        assert h.it.lease_owner == "w1"  # each boundary commits under the same claim
    records = {r["key"]: r for r in h.it.doc("artifacts")}
    assert records["a"]["remote_id"] == rid("a") and records["a"]["last_op"] == "create"
    assert records["a"]["intent"]["operation"] == "create"
    h.ok(Delivered(**h.lease(), result={"n": 2}), S.PENDING_READBACK)
    assert h.it.lease_owner is None and h.it.attempts == 0
    h.claim()
    d = h.ok(ReadBack(**h.lease(), readbacks=h.readbacks()), S.COMPLETED)
    packet = h.it.doc("review_packet")
    assert bound_digests(d.event) == {"packet": packet["digest"]}
    assert packet["void"] is False and packet["delivery_seq"] == 0 and packet["item"] == h.item_id
    assert [
        (x["key"], x["content_hash"], x["remote_id"], x["readback_hash"])
        for x in packet["artifacts"]
    ] == [
        ("a", a.content_hash, rid("a"), a.content_hash),
        ("b", b.content_hash, rid("b"), b.content_hash),
    ]
    assert all(r["readback_hash"] == r["content_hash"] for r in h.it.doc("artifacts"))
    assert h.it.doc("result") == {"n": 2}


def test_stage_failing_qa_stops_in_exception(h: Harness) -> None:
    """QA that does not pass is an exception with the failing keys, before any remote call."""
    delivering(h)
    a, b = art("a"), art("b")
    d = h.stage([a, b], qa={"a": QAResult(True), "b": QAResult(False, {"why": "typo"})})
    assert d.state is S.EXCEPTION and d.reasons == ("qa_failed",)
    assert h.it.doc("exception")["evidence"] == {"failed": ("b",)}
    assert h.it.doc("artifacts") is None


def test_stage_is_refused_twice_and_with_duplicate_keys(h: Harness) -> None:
    """One staging per delivery; keys must be unique and non-empty."""
    delivering(h)
    before = h.it
    d = h.stage([art("a"), art("a")])
    assert d.reasons == ("invalid_input",) and unchanged(before, d)
    assert h.stage([art("a")]).applied
    assert h.stage([art("b")]).reasons == ("already_staged",)


def test_intent_and_bind_guards(h: Harness) -> None:
    """Intents name a staged key with the right operation; binds follow an intent."""
    delivering(h)
    h.stage([art("a")])
    h.refused(
        Intent(**h.lease(), key="zz", operation="create", idempotency_key="k"), "scope_invalid"
    )
    h.refused(
        Intent(**h.lease(), key="a", operation="update", idempotency_key="k"), "illegal_transition"
    )
    h.refused(
        Bind(**h.lease(), key="a", operation="create", remote_id="r", remote_version="1"),
        "illegal_transition",
    )
    h.ok(Intent(**h.lease(), key="a", operation="create", idempotency_key="k"))
    h.refused(
        Bind(**h.lease(), key="a", operation="create", remote_id="", remote_version="1"),
        "invalid_input",
    )
    h.refused(
        Bind("w2", h.it.lease_token, key="a", operation="create", remote_id="r", remote_version=""),
        "lease_lost",
    )
    for remote_id, version in (("a\x00b", "1"), ("x" * 2049, "1"), ("\ud800", "1"), ("r", "\n")):
        h.refused(
            Bind(
                **h.lease(),
                key="a",
                operation="create",
                remote_id=remote_id,
                remote_version=version,
            ),
            "invalid_input",
        )
    h.ok(Bind(**h.lease(), key="a", operation="create", remote_id="r" * 2048, remote_version=""))


def test_delivered_needs_every_artifact_bound(h: Harness) -> None:
    """An artifact without a remote identity blocks delivered."""
    delivering(h)
    h.stage([art("a"), art("b")])
    h.write("a")
    h.refused(Delivered(**h.lease()), "artifact_not_bound")
    h.write("b")
    h.ok(Delivered(**h.lease()), S.PENDING_READBACK)


def test_readback_mismatch_is_an_exception(h: Harness) -> None:
    """A readback that differs from what was sent stops in exception with the differing fields."""
    h.to_pending_readback([art("a"), art("b")])
    h.claim()
    seen = h.readbacks()
    seen["b"] = Observed("f" * 64, "v3", ("body",))
    d = h.ok(ReadBack(**h.lease(), readbacks=seen), S.EXCEPTION)
    assert d.reasons == ("readback_mismatch",)
    evidence = h.it.doc("exception")["evidence"]
    assert evidence == {"b": {"fields": ("body",), "observed": "f" * 64}}
    assert h.it.doc("review_packet") is None


def test_readback_of_one_object_bound_to_two_artifacts_is_an_exception(h: Harness) -> None:
    """Two artifacts bound to one remote object (a record bound before the store kept holds):
    each reads back as written, and neither is evidence of the other's delivery."""
    delivering(h)
    h.stage([art("a"), art("b")])
    h.write("a", remote_id="same")
    h.write("b", remote_id="same")
    h.ok(Delivered(**h.lease()), S.PENDING_READBACK)
    h.claim()
    d = h.ok(ReadBack(**h.lease(), readbacks=h.readbacks()), S.EXCEPTION)
    assert d.reasons == ("readback_mismatch",)
    evidence = h.it.doc("exception")["evidence"]
    assert evidence == {"a": {"shared_with": ("b",)}, "b": {"shared_with": ("a",)}}
    assert h.it.doc("review_packet") is None


def test_readback_of_a_missing_object_is_an_exception(h: Harness) -> None:
    """An object that cannot be read back is remote_identity_missing, not completed."""
    readback_missing(h)
    assert h.events[-1].reasons == ("remote_identity_missing",)
    assert h.it.doc("exception")["evidence"] == {"a": {"missing": True}}


def test_readback_that_omits_an_object_is_an_exception(h: Harness) -> None:
    """An object the readback does not mention counts as missing: never completed without
    it, and never an error of the core."""
    h.to_pending_readback([art("a"), art("b")])
    h.claim()
    seen = h.readbacks(["a"])
    d = h.ok(ReadBack(**h.lease(), readbacks=seen), S.EXCEPTION)
    assert d.reasons == ("remote_identity_missing",)
    assert h.it.doc("exception")["evidence"] == {"b": {"missing": True}}


def test_delivered_needs_the_artifacts_staged(h: Harness) -> None:
    """Bound artifacts with no staging record (forged) are not delivered."""
    delivering(h)
    h.stage([art("a")])
    h.write("a")
    merged = {k: v for k, v in h.it.data.items() if k != "staged"}
    h.item = replace(h.it, data=MappingProxyType(merged))
    h.refused(Delivered(**h.lease()), "illegal_transition")


def test_delivered_is_bound_to_the_digest_it_carried_out(h: Harness) -> None:
    """An outcome that names the proposal it carried out (an agent's) is refused for any other
    proposal, in the core: a caller that skips the agent desk's own check gets no further."""
    delivering(h)
    current = h.it.doc("proposal")["digest"]
    h.refused(Delivered(**h.lease(), digest="0" * 64), "proposal_digest_mismatch")
    h.ok(Delivered(**h.lease(), digest=current), S.PENDING_READBACK)


def test_readback_is_illegal_while_delivering(h: Harness) -> None:
    """Readback comes after delivered, not before."""
    delivering(h)
    h.stage([art("a")])
    h.refused(ReadBack(**h.lease(), readbacks={}), "illegal_transition")


# --- review --------------------------------------------------------------------------------------


def test_review_binds_to_the_packet_and_the_delivery_head(h: Harness) -> None:
    """A verdict records the packet digest and its delivery sequence."""
    h.to_completed()
    d = h.ok(Review("olivia", h.packet(), "approve"), S.COMPLETED)
    review = h.it.doc("review")
    assert (review["packet"], review["delivery_seq"], review["verdict"]) == (
        h.packet(),
        0,
        "approve",
    )
    assert bound_digests(d.event) == {"packet": h.packet()}


def test_review_refusals(h: Harness) -> None:
    """Wrong packet, bad verdict, unreasoned reject, and non-operators are refused."""
    h.to_completed()
    h.refused(Review("olivia", "0" * 64, "approve"), "review_packet_stale")
    h.refused(Review("olivia", h.packet(), "maybe"), "invalid_input")
    h.refused(Review("olivia", h.packet(), "reject"), "invalid_input")
    h.refused(Review("olivia", h.packet(), "reject", " \n\t"), "invalid_input")
    h.refused(Review("olivia", h.packet(), ""), "invalid_input")
    h.refused(Review("alice", h.packet(), "approve"), "actor_not_authorized")
    h.refused(
        Review("stranger", "x", "maybe"), "actor_unknown", "review_packet_stale", "invalid_input"
    )
    h.ok(Review("olivia", h.packet(), "reject", "layout"), S.COMPLETED)


def test_review_of_a_packet_behind_the_delivery_head_is_refused(h: Harness) -> None:
    """A packet whose delivery sequence is not the item's head is review_head_moved."""
    h.to_completed()
    h.item = replace(h.it, data=MappingProxyType({**h.it.data, "delivery_seq": 1}))
    h.refused(Review("olivia", h.packet(), "approve"), "review_head_moved")


def test_review_of_a_voided_packet_is_stale(h: Harness) -> None:
    """Once a revision opens, the old packet can no longer be reviewed (or reviewed again)."""
    h.to_completed()
    old = h.packet()
    h.ok(Revise("olivia", "clearer", ("a",)), S.REVISION_PREPARED)
    assert h.it.doc("review_packet")["void"] is True
    h.refused(Review("olivia", old, "approve"), "illegal_transition", "review_packet_stale")


# --- publish -------------------------------------------------------------------------------------


def test_publish_needs_mode_publish(h: Harness) -> None:
    """In draft mode stopline never publishes, even an approved packet."""
    h.to_completed()
    h.ok(Review("olivia", h.packet(), "approve"))
    h.refused(Publish("pat", h.packet()), "mode_forbids_publication")


def test_publish_needs_an_approved_review_of_this_packet() -> None:
    """No review, or a rejecting one, is review_not_approved; a wrong packet is stale."""
    h = publishing()
    h.to_completed()
    h.refused(Publish("pat", h.packet()), "review_not_approved")
    h.ok(Review("olivia", h.packet(), "reject", "layout"))
    h.refused(Publish("pat", h.packet()), "review_not_approved")
    h.refused(Publish("pat", "0" * 64), "review_packet_stale")


def test_publish_of_a_revised_delivery_needs_a_review_of_its_new_packet() -> None:
    """An approved review of the packet a revision superseded publishes neither that packet
    (void) nor the revision's new one."""
    h = publishing()
    h.to_completed()
    old = h.packet()
    h.ok(Review("olivia", old, "approve"))
    h.ok(Revise("olivia", "clearer", ("a",)), S.REVISION_PREPARED)
    h.refused(Publish("pat", old), "illegal_transition", "review_packet_stale")
    h.claim()
    h.stage([art("a", "new body")])
    h.write("a", "update", remote_id=h.it.doc("artifacts")[0]["remote_id"])
    h.ok(ReadBack(**h.lease(), readbacks=h.readbacks(["a"])), S.REVISION_COMPLETED)
    assert h.packet() != old
    h.refused(Publish("pat", old), "review_packet_stale")
    h.refused(Publish("pat", h.packet()), "review_not_approved")
    h.ok(Review("olivia", h.packet(), "approve"))
    h.ok(Publish("pat", h.packet()), S.REVISION_COMPLETED)


def test_an_approved_review_of_another_packet_publishes_nothing() -> None:
    """A review names its packet: one that names another (a revision clears the review, so
    only a record built this way holds one) is review_not_approved."""
    h = publishing()
    h.to_completed()
    h.ok(Review("olivia", h.packet(), "approve"))
    review = {**h.it.doc("review"), "packet": "f" * 64}
    h.item = replace(h.it, data=MappingProxyType({**h.it.data, "review": review}))
    h.refused(Publish("pat", h.packet()), "review_not_approved")


def test_publish_needs_a_publisher() -> None:
    """Operators and approvers are not publishers."""
    h = publishing()
    h.to_completed()
    h.ok(Review("olivia", h.packet(), "approve"))
    h.refused(Publish("olivia", h.packet()), "actor_not_authorized")
    h.refused(Publish("stranger", h.packet()), "actor_unknown")


def test_publish_records_the_signal_once() -> None:
    """An approved packet is published once; publishing again is zero_write published."""
    h = publishing()
    h.to_completed()
    h.ok(Review("olivia", h.packet(), "approve"))
    d = h.ok(Publish("pat", h.packet(), signal="release-7"), S.COMPLETED)
    publication = h.it.doc("publication")
    assert (publication["actor"], publication["packet"], publication["signal"]) == (
        "pat",
        h.packet(),
        "release-7",
    )
    assert bound_digests(d.event) == {"packet": h.packet()}
    before = h.it
    again = h.apply(Publish("pat", h.packet()))
    assert (again.outcome, again.reasons) == (Outcome.ZERO_WRITE, ("published",))
    assert unchanged(before, again)


# --- reconcile -----------------------------------------------------------------------------------


def test_reconcile_binds_a_found_object_whose_readback_matches(h: Harness) -> None:
    """A found object with the delivered content is bound and its readback recorded."""
    readback_missing(h)
    content = {r["key"]: r for r in h.it.doc("artifacts")}["a"]["content_hash"]
    d = h.ok(Reconcile("olivia", "a", Observed(content, "v9"), remote_id="found-a"), S.EXCEPTION)
    record = {r["key"]: r for r in h.it.doc("artifacts")}["a"]
    assert (record["remote_id"], record["remote_version"], record["readback_hash"]) == (
        "found-a",
        "v9",
        content,
    )
    assert d.event.detail["matches_current"] is True


def test_reconcile_never_creates(h: Harness) -> None:
    """Nothing found (or no identity) is refused: reconcile binds, it does not create."""
    readback_missing(h)
    h.refused(Reconcile("olivia", "a", None, remote_id="new"), "remote_identity_missing")
    h.refused(Reconcile("olivia", "a", Observed(None), remote_id="x"), "remote_identity_missing")
    content = h.it.doc("artifacts")[0]["content_hash"]
    h.refused(Reconcile("olivia", "a", Observed(content), remote_id=""), "remote_identity_missing")


def test_reconcile_refuses_a_found_object_that_does_not_match(h: Harness) -> None:
    """An object with other content is not ours to bind."""
    readback_missing(h)
    h.refused(Reconcile("olivia", "a", Observed("e" * 64), remote_id="x"), "readback_mismatch")


@pytest.mark.parametrize(
    ("actor", "key", "reasons"),
    [
        ("alice", "a", {"actor_not_authorized"}),
        ("stranger", "zz", {"actor_unknown", "scope_invalid"}),
    ],
)
def test_reconcile_refusals(h: Harness, actor: str, key: str, reasons: set[str]) -> None:
    """Operators only, for a key the item delivers."""
    readback_missing(h)
    content = h.it.doc("artifacts")[0]["content_hash"]
    h.refused(Reconcile(actor, key, Observed(content), remote_id="x"), *reasons)


def test_reconcile_is_illegal_on_a_completed_item(h: Harness) -> None:
    """A completed delivery is not reconciled."""
    h.to_completed()
    content = h.it.doc("artifacts")[0]["content_hash"]
    h.refused(Reconcile("olivia", "a", Observed(content), remote_id="x"), "illegal_transition")


def test_an_update_keeps_the_bound_identity(h: Harness) -> None:
    """A second delivery round updates the bound object; binding another id is not_an_update."""
    h.to_pending_readback([art("a")])
    h.claim()
    h.ok(ReadBack(**h.lease(), readbacks={"a": Observed("9" * 64)}), S.EXCEPTION)
    h.ok(Resolve("olivia", "try again", {}), S.OBSERVING)
    h.observe()
    h.propose()
    h.approve("alice")
    h.execute()
    h.claim()
    h.stage([art("a")])
    h.ok(Intent(**h.lease(), key="a", operation="update", idempotency_key="k"))
    h.refused(
        Bind(
            **h.lease(), key="a", operation="update", remote_id="someone-else", remote_version="1"
        ),
        "not_an_update",
    )


def test_an_object_found_after_an_unknown_outcome_counts_as_written(h: Harness) -> None:
    """A create whose outcome is unknown (its intent recorded, no identity bound) stops the
    item in exception. Reconciling the object found under its key binds it and records it as
    written ("found"), so that going on from there updates it or reads it back, and never
    creates a second one; reconciled again, it keeps the operation it has."""
    delivering(h)
    h.stage([art("a")])
    h.ok(Intent(**h.lease(), key="a", operation="create", idempotency_key="k"))
    h.ok(NeedsEyes(**h.lease(), owner="ops", why="create outcome unknown"), S.EXCEPTION)
    record = {r["key"]: r for r in h.it.doc("artifacts")}["a"]
    assert not written(h.it, record) and record["last_op"] is None
    content = record["content_hash"]
    h.ok(Reconcile("olivia", "a", Observed(content, "v1"), remote_id="found-a"), S.EXCEPTION)
    record = {r["key"]: r for r in h.it.doc("artifacts")}["a"]
    assert (record["remote_id"], record["last_op"]) == ("found-a", "found")
    assert written(h.it, record)
    # reconciled again: the record keeps the operation it has
    h.ok(Reconcile("olivia", "a", Observed(content, "v2"), remote_id="found-a"), S.EXCEPTION)
    assert {r["key"]: r for r in h.it.doc("artifacts")}["a"]["last_op"] == "found"
