"""The adversarial catalogue of approval, at the command line on a real SQLite file.

Every case ends refused (exit 3, the exact reason codes) with the database unchanged and no
action executed; the two re-checks at execution (role revoked, evidence aged) end back in
``awaiting_approval`` with their reasons in the history, and nothing executed.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from stopline.controller import Controller
from stopline.core.canonical import parse_time
from stopline.core.names import InvalidName
from stopline.core.records import Actor
from stopline.core.states import State
from stopline.store import open_store

from .apps.refund_app import build_app
from .conftest import Env

APPROVE = "approve"


def approve(ref: str, digest: str, actor: str, *extra: str) -> list[str]:
    return [APPROVE, ref, "--proposal", digest, "--actor", actor, *extra]


def awaiting(env: Env, ref: str, digest: str) -> None:
    """The item still waits for approval of ``digest``, and a worker run executes nothing."""
    ran = len(env.executions())
    env.work()
    view = env.show(ref)
    assert view["state"] == "awaiting_approval"
    assert view["proposal"]["digest"] == digest
    assert len(env.executions()) == ran


def test_stale_digest(env: Env) -> None:
    """An approval of a digest that an edit replaced (whole, or as a prefix) is refused
    proposal_digest_mismatch."""
    ref = env.setup()["k1"]["id"]
    old = env.digest(ref)
    env.cli_ok("edit", ref, "--actor", "alice", "--params", '{"amount": 99, "to": "k1"}')
    new = env.digest(ref)
    assert new != old
    env.refused(approve(ref, old, "bob"), ["proposal_digest_mismatch"])
    env.refused(approve(ref, "0" * 64, "bob"), ["proposal_digest_mismatch"])
    # a prefix of the replaced digest resolves to that proposal: refused, with the diff
    env.refused(approve(ref, old[:12], "bob"), ["proposal_digest_mismatch"])
    awaiting(env, ref, new)


def test_approval_by_the_proposing_automation(env: Env) -> None:
    """An actor with the approver role whose name is the proposer (the automation) may not approve.

    The registry refuses such a name (``:`` is not in the actor alphabet); one planted in an
    older registry is still refused self_approval."""
    with pytest.raises(InvalidName, match="U\\+003A COLON"):
        build_app(env.log, actors={"automation:refund": ("approver",)})
    ref = env.setup(actors={"bob": ("approver",)})["k1"]["id"]
    store = open_store(env.url)
    try:
        planted = Actor("automation:refund", frozenset({"approver"}))
        store.set_actor(planted, "add", {"roles": ["approver"]}, datetime.now(UTC))
    finally:
        store.close()
    digest = env.digest(ref)
    assert env.show(ref)["proposal"]["proposer"] == "automation:refund"
    env.refused(approve(ref, digest, "automation:refund"), ["self_approval"])
    awaiting(env, ref, digest)


def test_approval_by_the_person_who_edited(env: Env) -> None:
    """A person who edited the proposal (now its author) may not approve it, role or not."""
    ref = env.setup()["k1"]["id"]
    env.cli_ok("edit", ref, "--actor", "alice", "--params", '{"amount": 5, "to": "k1"}')
    digest = env.digest(ref)
    assert env.show(ref)["proposal"]["edited_by"] == "alice"
    env.refused(approve(ref, digest, "alice"), ["self_approval"])
    awaiting(env, ref, digest)


def test_approval_by_the_last_editor(env: Env) -> None:
    """After two edits, the last editor may not approve the proposal they last changed."""
    ref = env.setup()["k1"]["id"]
    env.cli_ok("edit", ref, "--actor", "alice", "--params", '{"amount": 5, "to": "k1"}')
    env.cli_ok("edit", ref, "--actor", "erin", "--params", '{"amount": 6, "to": "k1"}')
    digest = env.digest(ref)
    assert env.show(ref)["proposal"]["edited_by"] == "erin"
    env.refused(approve(ref, digest, "erin"), ["self_approval"])
    awaiting(env, ref, digest)


def test_unknown_actor(env: Env) -> None:
    """An actor missing from the registry is refused actor_unknown (the real program exits 3)."""
    ref = env.setup()["k1"]["id"]
    digest = env.digest(ref)
    env.refused(approve(ref, digest, "mallory"), ["actor_unknown"])
    before = env.dump()
    done = env.sub(*approve(ref, digest, "mallory"))
    assert done.returncode == 3, done.stderr
    assert '"actor_unknown"' in done.stdout
    assert env.dump() == before
    awaiting(env, ref, digest)


def test_revoked_actor_is_unknown(env: Env) -> None:
    """An actor revoked as a whole is refused actor_unknown, although it still holds the role."""
    ref = env.setup()["k1"]["id"]
    digest = env.digest(ref)
    env.cli_ok("actors", "revoke", "bob")
    env.refused(approve(ref, digest, "bob"), ["actor_unknown"])
    awaiting(env, ref, digest)


@pytest.mark.parametrize("actor", ["carol", "dana"])
def test_actor_without_the_role(env: Env, actor: str) -> None:
    """A known actor without a role the policy requires is refused actor_not_authorized."""
    ref = env.setup()["k1"]["id"]
    digest = env.digest(ref)
    env.refused(approve(ref, digest, actor), ["actor_not_authorized"])
    awaiting(env, ref, digest)


def test_every_failing_rule_is_named(env: Env) -> None:
    """A command breaking several rules is refused with every one of them, not the first."""
    ref = env.setup()["k1"]["id"]
    old = env.digest(ref)
    env.cli_ok("edit", ref, "--actor", "alice", "--params", '{"amount": 5, "to": "k1"}')
    env.refused(approve(ref, old, "alice"), ["proposal_digest_mismatch", "self_approval"])
    env.refused(approve(ref, old, "carol"), ["proposal_digest_mismatch", "actor_not_authorized"])
    env.refused(approve(ref, old, "mallory"), ["proposal_digest_mismatch", "actor_unknown"])


@pytest.mark.parametrize(
    ("revoke", "reason"),
    [(["--role", "approver"], "actor_not_authorized"), ([], "actor_unknown")],
    ids=["role", "actor"],
)
def test_role_revoked_between_approve_and_execute(env: Env, revoke: list[str], reason: str) -> None:
    """Revoked after approving: the worker executes nothing and the item waits again, with why."""
    ref = env.setup()["k1"]["id"]
    digest = env.digest(ref)
    assert env.cli_ok(*approve(ref, digest, "bob"))["state"] == "approved"
    done = env.sub("actors", "revoke", "bob", *revoke)
    assert done.returncode == 0, done.stderr
    env.work_cli()
    assert env.executions() == []
    view = env.show(ref)
    assert view["state"] == "awaiting_approval"
    assert view["proposal"]["digest"] == digest
    assert view["proposal"]["approvals"] == []
    last = env.history(ref)[-1]
    assert (last["command"], last["from_state"], last["to_state"]) == (
        "recheck_failed",
        "approved",
        "awaiting_approval",
    )
    assert sorted(last["reasons"]) == sorted([reason, "approvals_missing"])
    assert last["detail"]["voided_approvals"] == ["bob"]
    env.refused(approve(ref, digest, "bob"), [reason])
    awaiting(env, ref, digest)


def test_a_revoked_approval_does_not_count_towards_n(env: Env) -> None:
    """Of two approvals the first one's role was revoked: the second alone is "1 of 2"."""
    ref = env.setup(approvals=2)["k1"]["id"]
    digest = env.digest(ref)
    env.cli_ok(*approve(ref, digest, "bob"))
    env.cli_ok("actors", "revoke", "bob", "--role", "approver")
    decision = env.cli_ok(*approve(ref, digest, "erin"))
    assert decision["state"] == "awaiting_approval"


def test_a_revoked_approval_never_executes(env: Env) -> None:
    """Two approvals, one revoked before the worker runs: nothing executes, "1 of 2" remains."""
    ref = env.setup(approvals=2)["k1"]["id"]
    digest = env.digest(ref)
    env.cli_ok(*approve(ref, digest, "bob"))
    env.cli_ok("actors", "revoke", "bob", "--role", "approver")
    env.cli_ok(*approve(ref, digest, "erin"))
    env.work()
    assert env.executions() == []
    view = env.show(ref)
    assert view["state"] == "awaiting_approval"
    assert [a["actor"] for a in view["proposal"]["approvals"]] == ["erin"]
    assert view["proposal"]["approvals_text"] == "1 of 2"
    env.refused(approve(ref, digest, "bob"), ["actor_not_authorized"])
    assert env.cli_ok(*approve(ref, digest, "alice"))["state"] == "approved"
    env.work()
    assert [e["digest"] for e in env.executions()] == [digest]


def test_evidence_aged_between_approve_and_execute(env: Env) -> None:
    """Evidence past its maximum age when the worker runs: nothing executes, the item waits again."""
    ref = env.setup(max_evidence_age=3.0)["k1"]["id"]
    digest = env.digest(ref)
    observed = parse_time(env.show(ref)["evidence"]["observed_at"])
    # Approved one second after the observation whatever the wall clock says (a slow machine
    # could otherwise let the evidence age before the approval); the worker then runs at the
    # wall clock, certainly past the age.
    store = open_store(env.url)
    try:
        pinned = Controller(store, clock=lambda: observed + timedelta(seconds=1))
        assert pinned.approve(ref, proposal=digest, actor="bob").state is State.APPROVED
    finally:
        store.close()
    time.sleep(max(0.0, 3.2 - (datetime.now(UTC) - observed).total_seconds()))
    env.work()
    assert env.executions() == []
    view = env.show(ref)
    assert (view["state"], view["proposal"]["approvals"]) == ("awaiting_approval", [])
    last = env.history(ref)[-1]
    assert (last["command"], last["reasons"]) == ("recheck_failed", ["evidence_stale"])
    assert last["detail"]["voided_approvals"] == ["bob"]
    env.refused(approve(ref, digest, "bob"), ["evidence_stale"])
    awaiting(env, ref, digest)
    # The way forward: fresh evidence, a new proposal, a new approval; then it executes once.
    env.cli_ok("reinspect", ref, "--actor", "alice", "--reason", "evidence aged")
    env.work()
    fresh = env.digest(ref)
    assert fresh != digest
    assert env.cli_ok(*approve(ref, fresh, "bob"))["state"] == "approved"
    env.work()
    assert [e["digest"] for e in env.executions()] == [fresh]


@pytest.mark.parametrize("state", ["approved", "completed", "ready_for_review"])
def test_approval_of_an_item_in_another_state(env: Env, state: str) -> None:
    """Approving an item that is not awaiting approval is refused illegal_transition."""
    items = env.setup(keys=("k1", "k2"), report_keys=("k2",))
    ref = items["k1"]["id"]
    digest = env.digest(ref)
    env.cli_ok(*approve(ref, digest, "bob"))
    if state == "completed":
        env.work()
        assert len(env.executions()) == 1
    if state == "ready_for_review":
        ref = items["k2"]["id"]
        env.refused(approve(ref, digest, "erin"), ["illegal_transition", "no_proposal"])
    else:
        env.refused(approve(ref, digest, "erin"), ["illegal_transition"])
    assert env.show(ref)["state"] == state


def test_approval_replayed_on_another_item(env: Env) -> None:
    """The digest of item A presented on item B is refused proposal_digest_mismatch."""
    items = env.setup(keys=("k1", "k2"))
    a, b = items["k1"]["id"], items["k2"]["id"]
    digest_a, digest_b = env.digest(a), env.digest(b)
    assert digest_a != digest_b
    env.refused(approve(b, digest_a, "bob"), ["proposal_digest_mismatch"])
    env.refused(approve("refund/k2", digest_a, "bob"), ["proposal_digest_mismatch"])
    awaiting(env, b, digest_b)
    # and once A is approved, its approval is still A's alone
    env.cli_ok(*approve(a, digest_a, "bob"))
    env.refused(approve(b, digest_a, "erin"), ["proposal_digest_mismatch"])
    env.work()
    assert [(e["item"], e["digest"]) for e in env.executions()] == [(a, digest_a)]
    assert env.show(b)["state"] == "awaiting_approval"


def test_approval_after_rejection(env: Env) -> None:
    """After a rejection (closing, or returning it), the rejected digest is refused."""
    items = env.setup(keys=("k1", "k2"))
    closed, returned = items["k1"]["id"], items["k2"]["id"]
    d_closed, d_returned = env.digest(closed), env.digest(returned)
    env.cli_ok("reject", closed, "--actor", "alice", "--reason", "not eligible")
    env.refused(approve(closed, d_closed, "bob"), ["illegal_transition", "no_proposal"])
    env.cli_ok("reject", returned, "--actor", "alice", "--reason", "too much", "--return")
    assert env.show(returned)["state"] == "classified"
    env.refused(approve(returned, d_returned, "bob"), ["illegal_transition", "no_proposal"])
    env.work()
    assert env.show(returned)["state"] == "awaiting_approval"
    env.refused(approve(returned, d_returned, "bob"), ["proposal_digest_mismatch"])
    assert env.show(closed)["state"] == "closed"
    assert env.executions() == []


def test_rejected_digest_stays_rejected_when_reproposed_unchanged(env: Env) -> None:
    """A propose hook that ignores the rejection must not revive the rejected digest."""
    ref = env.setup(echo_rejection=False)["k1"]["id"]
    rejected = env.digest(ref)
    env.cli_ok("reject", ref, "--actor", "alice", "--reason", "wrong account", "--return")
    env.work()
    assert env.show(ref)["state"] == "awaiting_approval"
    env.refused(approve(ref, rejected, "bob"), ["proposal_digest_mismatch"])


def test_idempotency_key_reused_for_another_command(env: Env) -> None:
    """A key used by one approval and presented by its actor with another command is refused,
    zero writes. A key is its actor's own: the same key from another actor is another key."""
    items = env.setup(keys=("k1", "k2"), approvals=2)
    ref, other = items["k1"]["id"], items["k2"]["id"]
    digest = env.digest(ref)
    env.cli_ok(*approve(ref, digest, "bob", "--idempotency-key", "K1"))
    reuse = ["idempotency_key_reuse"]
    env.refused(approve(other, env.digest(other), "bob", "--idempotency-key", "K1"), reuse)
    env.refused(
        ["reject", ref, "--actor", "bob", "--reason", "no", "--idempotency-key", "K1"], reuse
    )
    view = env.show(ref)
    assert (view["state"], view["proposal"]["approvals_text"]) == ("awaiting_approval", "1 of 2")
    erin = env.cli_ok(*approve(ref, digest, "erin", "--idempotency-key", "K1"))
    assert (erin["decision"], erin["state"]) == ("applied", "approved")


def test_idempotency_key_replayed_with_the_same_command(env: Env) -> None:
    """The same key with the same command returns the original decision as zero_write, exit 0."""
    items = env.setup(keys=("k1",), approvals=2)
    ref = items["k1"]["id"]
    digest = env.digest(ref)
    first = env.cli_ok(*approve(ref, digest, "bob", "--idempotency-key", "K1"))
    assert (first["decision"], first["state"]) == ("applied", "awaiting_approval")
    replay = approve(ref, digest, "bob", "--idempotency-key", "K1")
    for moved_on in (False, True):
        if moved_on:  # the original decision still answers once the item has moved on
            assert env.cli_ok(*approve(ref, digest, "erin"))["state"] == "approved"
        before, audit = env.dump(), env.refusal_total()
        for same_item in (ref, "refund/k1"):
            replay[1] = same_item
            code, again = env.cli(*replay)
            assert code == 0, again
            assert (again["decision"], again["reasons"]) == ("zero_write", ["idempotent_replay"])
            assert (again["item"], again["state"], again["sequence"]) == (
                ref,
                "awaiting_approval",
                None,
            )
        assert env.dump() == before
        assert env.refusal_total() == audit
    assert env.executions() == []


@pytest.mark.parametrize(
    "actor_args", [["--actor", ""], ["--actor", "   "], []], ids=["empty", "blank", "missing"]
)
def test_missing_or_empty_actor_is_a_usage_error(env: Env, actor_args: list[str]) -> None:
    """`approve` without an actor, or with an empty one, is a usage error: exit 2, zero writes."""
    ref = env.setup()["k1"]["id"]
    digest = env.digest(ref)
    before, audit = env.dump(), env.refusal_total()
    done = env.sub(APPROVE, ref, "--proposal", digest, *actor_args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "--actor" in done.stderr
    assert done.stdout == ""
    assert env.dump() == before
    assert env.refusal_total() == audit
    awaiting(env, ref, digest)
