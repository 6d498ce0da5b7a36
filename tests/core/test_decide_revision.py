"""decide() for the revision lifecycle of a completed delivery (seed 000): prerequisites, the
completion gate, same-request recovery, paired artifacts, reconciliation."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any

import pytest

from stopline.core.artifacts import Artifact
from stopline.core.commands import (
    Bind,
    Failure,
    Finalize,
    Intent,
    Observed,
    Publish,
    QAResult,
    ReadBack,
    Reconcile,
    Review,
    Revise,
)
from stopline.core.decision import Outcome
from stopline.core.frozen import freeze
from stopline.core.policy import PUBLISH, DeliveryPolicy, Policy
from stopline.core.states import State

from .helpers import Harness, art, bound_digests, policy, rid, unchanged

S = State
A1, B1 = art("a", "alpha v1"), art("b", "beta v1")
A2, B2 = art("a", "alpha v2"), art("b", "beta v2")


def completed(h: Harness) -> Harness:
    """A completed two-artifact draft delivery."""
    h.to_completed([A1, B1])
    return h


def forge(h: Harness, **data: Any) -> None:
    """Change the item's documents directly, for states no command sequence reaches."""
    merged = dict(h.it.data)
    for key, value in data.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = freeze(value)
    h.item = replace(h.it, data=MappingProxyType(merged))


def set_artifact(h: Harness, key: str, **fields: Any) -> None:
    records = [dict(r) for r in h.it.doc("artifacts")]
    for r in records:
        if r["key"] == key:
            r.update(fields)
    forge(h, artifacts=records)


def record(h: Harness, key: str) -> dict[str, Any]:
    return {r["key"]: dict(r) for r in h.it.doc("artifacts")}[key]


def revised(h: Harness, *artifacts: Artifact) -> Harness:
    """Stage the revised artifacts and update every one in scope under a fresh claim."""
    h.claim()
    d = h.stage(artifacts)
    assert d.state is S.REVISION_PREPARED, d.reasons
    for a in artifacts:
        h.write(a.key, "update", remote_id=rid(a.key))
    return h


def gate(h: Harness, readbacks: dict[str, Observed] | None = None):
    return h.apply(
        ReadBack(**h.lease(), readbacks=h.readbacks() if readbacks is None else readbacks)
    )


def failed_with(h: Harness, d: Any, *reasons: str) -> None:
    assert d.outcome is Outcome.APPLIED and d.state is S.REVISION_FAILED, d
    assert set(d.reasons) == set(reasons), d.reasons
    assert h.it.doc("revision")["state"] == "revision_failed"
    assert set(h.it.doc("revision")["failure"]["reasons"]) == set(reasons)


# --- opening a revision --------------------------------------------------------------------------


def test_revise_opens_a_bound_revision(h: Harness) -> None:
    """revise binds the request, voids the packet, keeps identities, starts sequence 1."""
    completed(h)
    packet = h.packet()
    h.ok(Review("olivia", packet, "reject", "layout"))
    d = h.ok(Revise("olivia", "clearer writing", ("b", "a")), S.REVISION_PREPARED)
    revision = h.it.doc("revision")
    assert (revision["sequence"], revision["source_seq"], revision["scope"]) == (1, 0, ("a", "b"))
    assert revision["superseded"]["a"] == {
        "content_hash": A1.content_hash,
        "qa_hash": record(h, "a")["qa_hash"],
        "remote_id": rid("a"),
        "readback_hash": A1.content_hash,
    }
    assert h.it.doc("delivery_seq") == 1
    assert h.it.doc("review_packet")["void"] is True
    assert h.it.doc("review") is None and h.it.doc("previous_review")["verdict"] == "reject"
    assert [record(h, k)["remote_id"] for k in "ab"] == [rid("a"), rid("b")]
    assert bound_digests(d.event) == {
        "request": revision["request_digest"],
        "voided_packet": packet,
    }
    assert h.it.attempts == 0 and h.it.lease_owner is None


def test_revise_then_complete(h: Harness) -> None:
    """Both drafts updated in place and read back: revision_completed with a new packet."""
    completed(h)
    old_packet = h.packet()
    h.revise("a", "b")
    revised(h, A2, B2)
    d = gate(h)
    assert d.state is S.REVISION_COMPLETED and h.state is S.REVISION_COMPLETED
    packet = h.it.doc("review_packet")
    assert packet["delivery_seq"] == 1 and packet["digest"] != old_packet
    assert [(x["content_hash"], x["remote_id"]) for x in packet["artifacts"]] == [
        (A2.content_hash, rid("a")),
        (B2.content_hash, rid("b")),
    ]
    assert h.it.doc("revision")["state"] == "revision_completed"
    h.refused(Review("olivia", old_packet, "approve"), "review_packet_stale")
    h.ok(Review("olivia", h.packet(), "approve"), S.REVISION_COMPLETED)
    assert h.it.doc("review")["delivery_seq"] == 1
    assert h.apply(Finalize()).reasons == ("already_completed",)


def test_a_completed_revision_can_be_revised_again(h: Harness) -> None:
    """A second request gets sequence 2 and supersedes the first revision's results."""
    completed(h)
    h.revise("a")
    revised(h, A2)
    gate(h, h.readbacks(["a"]))
    h.ok(Revise("olivia", "again", ("a",)), S.REVISION_PREPARED)
    revision = h.it.doc("revision")
    assert revision["sequence"] == 2 and revision["source_seq"] == 1
    assert revision["superseded"]["a"]["content_hash"] == A2.content_hash
    assert [r["sequence"] for r in h.it.doc("revisions")] == [1]


# --- prerequisites: each refused, nothing written ------------------------------------------------


def refused_revise(h: Harness, *reasons: str, keys: tuple[str, ...] = ("a",)) -> None:
    before = h.it
    d = h.refused(Revise("olivia", "clearer", keys), *reasons)
    assert unchanged(before, d)


def refused_including(h: Harness, *reasons: str) -> None:
    """Refused with at least ``reasons`` (the head check of an unfinished item may add one)."""
    before = h.it
    d = h.apply(Revise("olivia", "clearer", ("a",)))
    assert d.outcome is Outcome.REFUSED and set(reasons) <= set(d.reasons), d.reasons
    assert set(d.reasons) <= {*reasons, "review_head_moved"}, d.reasons
    assert unchanged(before, d)


def test_revise_refused_when_the_mode_forbids_it() -> None:
    """A delivery policy that is not revisable refuses mode_forbids_revision."""
    h = Harness(policy=policy(delivery=DeliveryPolicy(revisable=False)))
    completed(h)
    refused_revise(h, "mode_forbids_revision")


def test_revise_refused_without_a_revise_hook() -> None:
    """Revisable, but the automation declares no revise hook: mode_forbids_revision, no write."""
    h = Harness(policy=policy(revise_hook=False))
    completed(h)
    refused_revise(h, "mode_forbids_revision")


def test_a_failed_revision_is_not_resumed_without_a_revise_hook(h: Harness) -> None:
    """The same request on revision_failed checks the mode too: mode_forbids_revision."""
    completed(h)
    h.revise("a")
    h.claim()
    failed_with(h, h.stage([A1]), "content_unchanged", "qa_unchanged")
    h.policy = policy(revise_hook=False)
    before = h.it
    d = h.apply(Revise("olivia", "clearer writing", ("a",)))  # the same request
    assert (d.outcome, d.reasons) == (Outcome.REFUSED, ("mode_forbids_revision",)), d.reasons
    assert unchanged(before, d)


def test_the_revise_hook_flag_is_in_the_policy_version_not_the_approval_version() -> None:
    """Approvals record the approval policy's version: the hook flag leaves it alone."""
    with_hook, without = Policy(revise_hook=True), Policy(revise_hook=False)
    assert with_hook.approval.version == without.approval.version
    assert with_hook.version != without.version
    assert Policy.from_plain(with_hook.to_plain()) == with_hook
    stored_before = {k: v for k, v in with_hook.to_plain().items() if k != "revise_hook"}
    assert Policy.from_plain(stored_before).revise_hook is False  # unknown: fail closed


def test_revise_refused_once_published() -> None:
    """A published delivery is not revised."""
    h = Harness(policy=policy(delivery=DeliveryPolicy(mode=PUBLISH)))
    completed(h)
    h.ok(Review("olivia", h.packet(), "approve"))
    h.ok(Publish("pat", h.packet()))
    refused_revise(h, "published")


def test_revise_refused_for_an_unbound_artifact(h: Harness) -> None:
    """An artifact without a remote identity is artifact_not_bound (forged: unreachable)."""
    completed(h)
    set_artifact(h, "a", remote_id=None)
    refused_revise(h, "artifact_not_bound")


def test_revise_refused_without_verified_readback(h: Harness) -> None:
    """An artifact whose readback is missing or differs is readback_unverified (forged)."""
    completed(h)
    set_artifact(h, "a", readback_hash=None)
    refused_revise(h, "readback_unverified")
    set_artifact(h, "a", readback_hash="d" * 64)
    refused_revise(h, "readback_unverified")


def test_revise_refused_when_the_review_head_moved(h: Harness) -> None:
    """A review of another packet, or a packet behind the delivery head (forged)."""
    completed(h)
    h.ok(Review("olivia", h.packet(), "approve"))
    review = dict(h.it.doc("review"))
    forge(h, review={**review, "packet": "c" * 64})
    refused_revise(h, "review_head_moved")
    h2 = completed(Harness())
    forge(h2, delivery_seq=3)
    refused_revise(h2, "review_head_moved")


@pytest.mark.parametrize("state", ["revision_prepared", "revision_failed"])
def test_revise_refused_while_a_revision_is_active(h: Harness, state: str) -> None:
    """An open revision, prepared or failed, blocks another: revision_active (the state
    alone, forged)."""
    completed(h)
    forge(h, revision={"state": state, "sequence": 1})
    refused_revise(h, "revision_active")


def test_revise_refused_on_a_voided_packet(h: Harness) -> None:
    """A packet voided by an earlier request is no head to revise from (forged: a completed
    item whose packet says void)."""
    completed(h)
    forge(h, review_packet={**dict(h.it.doc("review_packet")), "void": True})
    refused_revise(h, "review_head_moved")


def test_revise_on_a_revision_in_progress_names_revision_active(h: Harness) -> None:
    """Revising an item in revision_prepared is illegal and names the active revision."""
    completed(h)
    h.revise("a")
    refused_including(h, "illegal_transition", "not_completed", "revision_active")


@pytest.mark.parametrize("keys", [(), ("zz",), ("a", "a"), ("a", "zz")])
def test_revise_refused_for_an_invalid_scope(h: Harness, keys: tuple[str, ...]) -> None:
    """An empty, unknown or repeated artifact scope is scope_invalid."""
    completed(h)
    refused_revise(h, "scope_invalid", keys=keys)


def test_revise_refused_before_completion(h: Harness) -> None:
    """An item that never completed cannot be revised."""
    h.to_awaiting()
    refused_including(h, "illegal_transition", "not_completed", "scope_invalid")


def test_revise_refusal_names_every_reason() -> None:
    """Unknown actor, blank reason and a forbidding mode are all reported."""
    h = Harness(policy=policy(delivery=DeliveryPolicy(revisable=False)))
    completed(h)
    h.refused(
        Revise("stranger", " ", ("zz",)),
        "actor_unknown",
        "invalid_input",
        "mode_forbids_revision",
        "scope_invalid",
    )
    h.refused(Revise("alice", "r", ("a",)), "actor_not_authorized", "mode_forbids_revision")


# --- the completion gate -------------------------------------------------------------------------


def test_gate_unchanged_content_fails_the_revision(h: Harness) -> None:
    """Staging the same content fails: content_unchanged and qa_unchanged."""
    completed(h)
    h.revise("a")
    h.claim()
    failed_with(h, h.stage([A1]), "content_unchanged", "qa_unchanged")


def test_gate_same_content_with_new_qa_is_still_content_unchanged(h: Harness) -> None:
    """New QA evidence over the same content does not make a revision."""
    completed(h)
    h.revise("a")
    h.claim()
    d = h.stage([A1], qa={"a": QAResult(True, {"rerun": True})})
    failed_with(h, d, "content_unchanged")


def test_gate_readback_without_staging_fails(h: Harness) -> None:
    """Reading back before anything was staged and updated proves nothing."""
    completed(h)
    h.revise("a")
    h.claim()
    failed_with(
        h, gate(h, h.readbacks(["a"])), "content_unchanged", "qa_unchanged", "not_an_update"
    )


def test_gate_requires_an_update_of_the_bound_object(h: Harness) -> None:
    """Revised content read back without an update call is not_an_update; creates refused."""
    completed(h)
    h.revise("a")
    h.claim()
    h.stage([A2])
    h.refused(
        Intent(**h.lease(), key="a", operation="create", idempotency_key="k"), "not_an_update"
    )
    h.ok(Intent(**h.lease(), key="a", operation="update", idempotency_key="k"))
    h.refused(
        Bind(**h.lease(), key="a", operation="create", remote_id="new", remote_version="1"),
        "not_an_update",
    )
    h.refused(
        Bind(**h.lease(), key="a", operation="update", remote_id="other", remote_version="1"),
        "not_an_update",
    )
    failed_with(h, gate(h, h.readbacks(["a"])), "not_an_update")


def test_gate_readback_mismatch_fails_the_revision(h: Harness) -> None:
    """An update whose readback differs from the revised content fails."""
    completed(h)
    h.revise("a")
    revised(h, A2)
    d = gate(h, {"a": Observed(A1.content_hash, "v3", ("body",))})
    failed_with(h, d, "readback_mismatch")
    assert h.it.doc("revision")["failure"]["mismatches"] == {
        "a": {"fields": ("body",), "observed": A1.content_hash}
    }


def test_gate_missing_remote_identity_fails_the_revision(h: Harness) -> None:
    """A vanished object stops the revision; nothing is recreated."""
    completed(h)
    h.revise("a")
    revised(h, A2)
    failed_with(h, gate(h, {"a": Observed(None)}), "remote_identity_missing")
    assert record(h, "a")["remote_id"] == rid("a")


def _forge_revision(h: Harness, **fields: Any) -> None:
    forge(h, revision={**dict(h.it.doc("revision")), **fields})


def _content_as_superseded(h: Harness) -> None:
    """The record holds the superseded content again (the readback will match it)."""
    _set(
        h,
        content_hash=A1.content_hash,
        qa={**record(h, "a")["qa"], "content_hash": A1.content_hash},
    )


def _set(h: Harness, **fields: Any) -> None:
    set_artifact(h, "a", **fields)


@pytest.mark.parametrize(
    ("change", "reasons"),
    [
        (lambda h: _forge_revision(h, staged=False), {"content_unchanged"}),
        (_content_as_superseded, {"content_unchanged"}),
        (lambda h: _set(h, remote_id="another-object"), {"not_an_update"}),
        (
            lambda h: _set(h, qa={**record(h, "a")["qa"], "content_hash": "c" * 64}),
            {"review_packet_stale"},
        ),
    ],
    ids=["not-staged", "superseded-content", "another-object", "qa-of-other-content"],
)
def test_the_gate_holds_each_rule_on_its_own(h: Harness, change: Any, reasons: set[str]) -> None:
    """Each rule of the completion gate fails the revision alone, in records no command
    sequence reaches (staging and binding refuse them first: forged): nothing staged, the
    superseded content again, another object than the bound one, QA of other content."""
    completed(h)
    h.revise("a")
    revised(h, A2)
    change(h)
    failed_with(h, gate(h, h.readbacks(["a"])), *reasons)


def test_resuming_needs_the_request_over_the_same_bindings(h: Harness) -> None:
    """The request digest covers the bindings the revision supersedes: the same reason and
    scope over other (forged) bindings are another request, never a resume."""
    completed(h)
    h.revise("a", reason="clearer writing")
    revised(h, A2)
    gate(h, {"a": Observed(None)})
    assert h.state is S.REVISION_FAILED
    superseded = dict(h.it.doc("revision")["superseded"])
    _forge_revision(h, superseded={"a": {**superseded["a"], "remote_id": "elsewhere"}})
    before = h.it
    d = h.refused(Revise("olivia", "clearer writing", ("a",)), "request_mismatch")
    assert unchanged(before, d)


def test_gate_publication_guard_fails_the_revision(h: Harness) -> None:
    """A publication signal appearing mid-revision fails the gate (forged: unreachable)."""
    completed(h)
    h.revise("a")
    revised(h, A2)
    forge(h, publication={"actor": "pat", "packet": "x"})
    failed_with(h, gate(h, h.readbacks(["a"])), "publication_guard")


def test_gate_review_head_moved_fails_the_revision(h: Harness) -> None:
    """A delivery head that moved away from the revision's sequence fails (forged)."""
    completed(h)
    h.revise("a")
    revised(h, A2)
    forge(h, delivery_seq=7)
    failed_with(h, gate(h, h.readbacks(["a"])), "review_head_moved")


def test_staging_outside_the_scope_fails_the_revision(h: Harness) -> None:
    """Changing an artifact that was not requested is scope_invalid."""
    completed(h)
    h.revise("a")
    h.claim()
    failed_with(h, h.stage([A2, B2]), "scope_invalid")


def test_worker_failure_fails_the_revision(h: Harness) -> None:
    """Any failure during a revision goes to revision_failed, never to a retry."""
    completed(h)
    h.revise("a")
    h.claim()
    d = h.apply(Failure(**h.lease(), failure_class="timeout", message="m", retryable=True))
    failed_with(h, d, "timeout")


# --- a paired revision ---------------------------------------------------------------------------


def test_paired_revision_fails_when_only_one_member_changed(h: Harness) -> None:
    """Both drafts in scope, only one changed: content_unchanged for the other."""
    completed(h)
    h.revise("a", "b")
    h.claim()
    failed_with(h, h.stage([A2, B1]), "content_unchanged", "qa_unchanged")


def test_paired_revision_fails_when_only_one_member_is_staged(h: Harness) -> None:
    """Leaving a member out of staging is the same as not changing it."""
    completed(h)
    h.revise("a", "b")
    h.claim()
    failed_with(h, h.stage([A2]), "content_unchanged", "qa_unchanged")


def test_paired_revision_fails_when_only_one_member_is_updated(h: Harness) -> None:
    """Both changed but only one updated remotely: not_an_update, not revision_completed."""
    completed(h)
    h.revise("a", "b")
    h.claim()
    h.stage([A2, B2])
    h.write("a", "update", remote_id=rid("a"))
    failed_with(h, gate(h, h.readbacks(["a", "b"])), "not_an_update")


# --- recovery by request identity ----------------------------------------------------------------


def test_same_request_resumes_a_failed_revision(h: Harness) -> None:
    """The same reason and scope take the revision up again and it can complete."""
    completed(h)
    h.revise("a", "b", reason="clearer writing")
    request = h.it.doc("revision")["request_digest"]
    revised(h, A2, B2)
    gate(h, {"a": Observed(None), "b": Observed(B2.content_hash)})
    assert h.state is S.REVISION_FAILED
    d = h.ok(Revise("olivia", "clearer writing", ("b", "a")), S.REVISION_PREPARED)
    revision = h.it.doc("revision")
    assert revision["request_digest"] == request and revision["sequence"] == 1
    assert revision["resumed"][0]["actor"] == "olivia" and d.event.detail["resumed"] is True
    # neither readback was recorded as verified, so both are written (or read and bound) again
    assert list(d.event.detail["rewrite"]) == ["a", "b"]
    assert all(h.it.doc("artifacts")[i]["last_op"] is None for i in (0, 1))
    h.claim()
    for key in ("a", "b"):
        h.write(key, "update", remote_id=rid(key))
    assert gate(h).state is S.REVISION_COMPLETED


def test_a_resumed_revision_cannot_complete_without_writing_again(h: Harness) -> None:
    """After a failed readback the resume demands a fresh update: a bare gate is not_an_update."""
    completed(h)
    h.revise("a", "b", reason="clearer writing")
    revised(h, A2, B2)
    gate(h, {"a": Observed("something else"), "b": Observed(B2.content_hash)})
    h.ok(Revise("olivia", "clearer writing", ("a", "b")), S.REVISION_PREPARED)
    h.claim()
    failed_with(h, gate(h), "not_an_update")


@pytest.mark.parametrize(
    ("reason", "keys"),
    [("another reason", ("a", "b")), ("clearer writing", ("a",)), ("clearer writing", ("b",))],
)
def test_another_request_cannot_take_over_a_failed_revision(
    h: Harness, reason: str, keys: tuple[str, ...]
) -> None:
    """A different reason or scope is request_mismatch, with zero writes."""
    completed(h)
    h.revise("a", "b", reason="clearer writing")
    h.claim()
    h.stage([A1, B1])
    assert h.state is S.REVISION_FAILED
    before = h.it
    d = h.refused(Revise("olivia", reason, keys), "request_mismatch")
    assert unchanged(before, d)
    h.refused(Revise("nora", reason, keys), "request_mismatch", "actor_not_authorized")


def test_reconcile_rebinds_a_found_object_and_the_revision_completes(h: Harness) -> None:
    """Missing identity stop, then verified reconciliation, then completion, without creating."""
    completed(h)
    h.revise("a")
    revised(h, A2)
    gate(h, {"a": Observed(None)})
    h.refused(Reconcile("olivia", "a", None, remote_id=rid("a")), "remote_identity_missing")
    h.refused(Reconcile("olivia", "a", Observed("e" * 64), remote_id=rid("a")), "readback_mismatch")
    d = h.ok(Reconcile("olivia", "a", Observed(A2.content_hash, "v5"), remote_id=rid("a")))
    assert d.state is S.REVISION_FAILED and d.event.detail["matches_current"] is True
    assert record(h, "a")["readback_hash"] == A2.content_hash
    h.ok(Revise("olivia", "clearer writing", ("a",)), S.REVISION_PREPARED)
    h.claim()
    assert gate(h, h.readbacks(["a"])).state is S.REVISION_COMPLETED
    binds = [(e.detail["key"], e.detail["operation"]) for e in h.events if e.command == "bind"]
    assert binds == [("a", "create"), ("b", "create"), ("a", "update")]  # no new object


def test_reconcile_never_swaps_a_bound_identity(h: Harness) -> None:
    """A failed revision keeps every remote identity: a found object other than the bound one
    (here of an artifact out of the scope, which the gate does not read) is not bound, even
    holding the artifact's content; the bound one is, as before."""
    completed(h)
    h.revise("a")
    revised(h, A2)
    gate(h, {"a": Observed(None)})
    before = h.it
    elsewhere = Reconcile("olivia", "b", Observed(B1.content_hash, "v7"), remote_id="elsewhere")
    d = h.refused(elsewhere, "not_an_update")
    assert unchanged(before, d)
    h.ok(Reconcile("olivia", "b", Observed(B1.content_hash, "v7"), remote_id=rid("b")))
    assert record(h, "b")["remote_id"] == rid("b")


def test_reconciling_the_old_content_requires_a_new_update(h: Harness) -> None:
    """After reconciling an object with the superseded content, the update must be made again."""
    completed(h)
    h.revise("a")
    revised(h, A2)
    gate(h, {"a": Observed(None)})
    before = record(h, "a")
    h.ok(Reconcile("olivia", "a", Observed(A1.content_hash, "v9"), remote_id=rid("a")))
    r = record(h, "a")
    assert r["readback_hash"] != r["content_hash"]  # the object does not hold the revision
    assert r["readback_hash"] == before["readback_hash"]  # no readback of the revision is made up
    assert r["last_op"] != "update"
    assert r["intent"] is None  # the update is intended afresh


def test_a_revision_writes_only_its_scope(h: Harness) -> None:
    """An intent to update an artifact outside the scope is scope_invalid."""
    completed(h)
    h.revise("a")
    h.claim()
    h.stage([A2])
    h.refused(
        Intent(**h.lease(), key="b", operation="update", idempotency_key="k"), "scope_invalid"
    )
