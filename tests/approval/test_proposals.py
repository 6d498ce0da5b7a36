"""Several approvers, edits that void approvals, rejection as a transition, and the digest a
person can recompute from ``stopline show``."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785

from .apps.refund_app import build_app
from .conftest import Env

VIEW_ONLY = ("digest", "approvals", "covers", "approvals_text", "outlook")


def approve(ref: str, digest: str, actor: str) -> list[str]:
    return ["approve", ref, "--proposal", digest, "--actor", actor]


def recompute(proposal: dict[str, Any]) -> str:
    """sha256 of the RFC 8785 canonical JSON of the covered fields (the rfc8785 package)."""
    body = {k: v for k, v in proposal.items() if k not in VIEW_ONLY}
    return hashlib.sha256(rfc8785.dumps(body)).hexdigest()


# --- N of M ----------------------------------------------------------------------------------


def test_one_of_two_approvals_shows_progress_and_waits(env: Env) -> None:
    """After one of two approvals `show` says "1 of 2" and the item stays awaiting_approval."""
    ref = env.setup(approvals=2)["k1"]["id"]
    digest = env.digest(ref)
    assert env.show(ref)["proposal"]["approvals_text"] == "0 of 2"
    decision = env.cli_ok(*approve(ref, digest, "bob"))
    assert (decision["decision"], decision["state"]) == ("applied", "awaiting_approval")
    view = env.show(ref)
    assert view["state"] == "awaiting_approval"
    assert view["proposal"]["approvals_text"] == "1 of 2"
    code, text = env.cli("show", ref, as_json=False)
    assert code == 0 and "1 of 2" in text and digest in text
    assert "(1 of 2)" in env.cli_ok("items")["items"][0]["why"]
    env.work()  # a worker run (and its discovery) moves nothing
    assert env.show(ref)["state"] == "awaiting_approval"
    assert env.executions() == []


def test_the_same_actor_twice_counts_once(env: Env) -> None:
    """A second approval by the same actor is a zero-write and still leaves "1 of 2"."""
    ref = env.setup(approvals=2)["k1"]["id"]
    digest = env.digest(ref)
    env.cli_ok(*approve(ref, digest, "bob"))
    before = env.dump()
    code, again = env.cli(*approve(ref, digest, "bob"))
    assert code == 0, again
    assert (again["decision"], again["reasons"], again["sequence"]) == (
        "zero_write",
        ["already_approved"],
        None,
    )
    assert env.dump() == before
    view = env.show(ref)
    assert (view["state"], view["proposal"]["approvals_text"]) == ("awaiting_approval", "1 of 2")
    assert [a["actor"] for a in view["proposal"]["approvals"]] == ["bob"]


def test_two_distinct_approvers_approve_and_it_executes_once(env: Env) -> None:
    """Two distinct approvers move it to approved; the worker then executes exactly once."""
    ref = env.setup(approvals=2)["k1"]["id"]
    digest = env.digest(ref)
    version = env.show(ref)["proposal"]["policy_version"]
    env.cli_ok(*approve(ref, digest, "bob"))
    assert env.cli_ok(*approve(ref, digest, "erin"))["state"] == "approved"
    approvals = env.show(ref)["proposal"]["approvals"]
    assert [(a["actor"], a["digest"], a["role"], a["policy_version"]) for a in approvals] == [
        ("bob", digest, "approver", version),
        ("erin", digest, "approver", version),
    ]
    assert all(a["at"] for a in approvals)
    env.work()
    env.work()
    assert [(e["item"], e["digest"]) for e in env.executions()] == [(ref, digest)]
    assert env.show(ref)["state"] == "completed"
    execute = [e for e in env.history(ref) if e["command"] == "execute"]
    assert len(execute) == 1 and execute[0]["detail"]["approvers"] == ["bob", "erin"]


# --- edits void approvals ----------------------------------------------------------------------


def test_an_edit_voids_approvals_and_never_carries_them_forward(env: Env) -> None:
    """An edit records the approvals it voids; the new digest starts again from "0 of 2"."""
    ref = env.setup(approvals=2)["k1"]["id"]
    old = env.digest(ref)
    env.cli_ok(*approve(ref, old, "bob"))
    edited = env.cli_ok("edit", ref, "--actor", "carol", "--params", '{"amount": 7, "to": "k1"}')
    assert (edited["decision"], edited["state"]) == ("applied", "awaiting_approval")
    new = env.digest(ref)
    assert new != old
    event = env.history(ref)[-1]
    assert event["command"] == "edit"
    assert event["detail"]["voided_approvals"] == ["bob"]
    assert (event["digests"]["previous"], event["digests"]["proposal"]) == (old, new)
    view = env.show(ref)
    assert view["proposal"]["approvals"] == []
    assert view["proposal"]["approvals_text"] == "0 of 2"
    assert view["proposal"]["previous_digest"] == old
    env.refused(approve(ref, old, "erin"), ["proposal_digest_mismatch"])
    # bob's approval of the old digest does not count for the new one: two are needed again
    assert env.cli_ok(*approve(ref, new, "bob"))["state"] == "awaiting_approval"
    assert env.show(ref)["proposal"]["approvals_text"] == "1 of 2"
    assert env.cli_ok(*approve(ref, new, "erin"))["state"] == "approved"
    env.work()
    assert [e["digest"] for e in env.executions()] == [new]


def test_reinspect_voids_approvals_and_makes_a_new_proposal(env: Env) -> None:
    """`reinspect` voids the approvals (recorded) and the fresh proposal has a new digest."""
    ref = env.setup(approvals=2)["k1"]["id"]
    old = env.digest(ref)
    env.cli_ok(*approve(ref, old, "bob"))
    env.cli_ok("reinspect", ref, "--actor", "carol", "--reason", "the balance changed")
    event = env.history(ref)[-1]
    assert (event["command"], event["detail"]["voided_approvals"]) == ("reinspect", ["bob"])
    env.work()
    view = env.show(ref)
    assert view["state"] == "awaiting_approval"
    assert view["proposal"]["digest"] != old
    assert view["proposal"]["approvals"] == []
    env.refused(approve(ref, old, "erin"), ["proposal_digest_mismatch"])


def test_separation_of_duties_can_be_turned_off_and_is_part_of_the_policy(env: Env) -> None:
    """With separation of duties off the editor may approve; the choice changes the policy version."""
    ref = env.setup(separation_of_duties=False)["k1"]["id"]
    env.cli_ok("edit", ref, "--actor", "alice", "--params", '{"amount": 3, "to": "k1"}')
    assert env.cli_ok(*approve(ref, env.digest(ref), "alice"))["state"] == "approved"
    on, off = (
        build_app(env.log, separation_of_duties=sod).automations[0].policy.approval.version
        for sod in (True, False)
    )
    assert on != off
    assert env.show(ref)["proposal"]["policy_version"] == off


def test_an_edit_keeps_the_policy_version(env: Env) -> None:
    """An edit under an unchanged policy records the same policy version as the proposal it replaces."""
    ref = env.setup(max_evidence_age=3600)["k1"]["id"]
    version = env.show(ref)["proposal"]["policy_version"]
    env.cli_ok("edit", ref, "--actor", "alice", "--params", '{"amount": 3, "to": "k1"}')
    assert env.show(ref)["proposal"]["policy_version"] == version


# --- rejection is a transition -------------------------------------------------------------------


def test_reject_return_hands_the_reason_to_the_propose_hook(env: Env) -> None:
    """`reject --return` sends the item back; the propose hook sees the rejection's reason."""
    ref = env.setup()["k1"]["id"]
    digest = env.digest(ref)
    done = env.cli_ok("reject", ref, "--actor", "alice", "--reason", "amount too high", "--return")
    assert (done["decision"], done["state"]) == ("applied", "classified")
    event = env.history(ref)[-1]
    assert (event["command"], event["digests"]["proposal"]) == ("reject", digest)
    assert event["detail"]["returned"] is True
    env.work()
    assert [p["rejection"] for p in env.hooks("propose")] == [None, "amount too high"]
    view = env.show(ref)
    assert view["state"] == "awaiting_approval"
    assert view["proposal"]["params"]["revised_after"] == "amount too high"
    assert view["proposal"]["digest"] != digest
    assert env.executions() == []


def test_reject_closes_without_action(env: Env) -> None:
    """`reject` without --return closes the item; no worker run executes it afterwards."""
    ref = env.setup()["k1"]["id"]
    digest = env.digest(ref)
    done = env.cli_ok("reject", ref, "--actor", "alice", "--reason", "not eligible")
    assert (done["decision"], done["state"]) == ("applied", "closed")
    env.work()
    assert env.show(ref)["state"] == "closed"
    assert env.executions() == []
    assert env.history(ref)[-1]["digests"]["proposal"] == digest


def test_rejection_is_bound_to_the_digest_it_rejects(env: Env) -> None:
    """A rejection naming another digest is refused proposal_digest_mismatch, zero writes."""
    items = env.setup(keys=("k1", "k2"))
    ref, other = items["k1"]["id"], items["k2"]["id"]
    digest = env.digest(ref)
    reject = ["reject", ref, "--actor", "alice", "--reason", "no"]
    env.refused([*reject, "--proposal", env.digest(other)], ["proposal_digest_mismatch"])
    env.refused([*reject, "--return", "--proposal", "f" * 64], ["proposal_digest_mismatch"])
    assert env.show(ref)["state"] == "awaiting_approval"
    assert env.cli_ok(*reject, "--proposal", digest)["state"] == "closed"
    rejection = env.show(ref)["rejection"]
    assert (rejection["digest"], rejection["actor"], rejection["reason"]) == (digest, "alice", "no")


# --- what `show` prints ----------------------------------------------------------------------------


def test_show_prints_a_digest_anyone_can_recompute(env: Env) -> None:
    """`show --json` prints the digest and `covers`; the digest is sha256 of canonical JSON of them."""
    ref = env.setup(approvals=2)["k1"]["id"]
    view = env.show(ref)
    proposal = view["proposal"]
    covered = sorted(k for k in proposal if k not in VIEW_ONLY)
    assert proposal["covers"] == covered
    must = {"action", "target", "params", "evidence", "proposer", "policy_version"}
    assert must <= set(covered)
    assert proposal["evidence"] == [
        {"digest": view["evidence"]["digest"], "observed_at": view["evidence"]["observed_at"]}
    ]
    assert recompute(proposal) == proposal["digest"]
    # approvals are not covered: the digest stays the same and recomputable after one
    env.cli_ok(*approve(ref, proposal["digest"], "bob"))
    after = env.show(ref)["proposal"]
    assert after["digest"] == proposal["digest"] == recompute(after)
    # an edit makes a new digest, recomputable the same way
    env.cli_ok("edit", ref, "--actor", "alice", "--params", '{"amount": 1, "to": "k1 ü"}')
    edited = env.show(ref)["proposal"]
    assert edited["digest"] != proposal["digest"]
    assert recompute(edited) == edited["digest"]
    code, text = env.cli("show", ref, as_json=False)
    assert code == 0 and edited["digest"] in text and "digest covers:" in text
