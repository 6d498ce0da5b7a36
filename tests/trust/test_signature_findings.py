"""What a worker in signed mode checks of the record it holds (``trust/checks.py``), one rule
at a time on records built here: the release that let the item out of its stop, bound to its
command's head or proposal and to this item; every counted approval while the item may act,
bound to the proposal, under the role it counts for; a key that must hold now only while the
item may act."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from helpers import T0
from stopline.core.canonical import format_time
from stopline.core.commands import Note, Publish
from stopline.core.frozen import freeze
from stopline.core.policy import DeliveryPolicy, Policy
from stopline.core.records import Event, Item
from stopline.core.states import State
from stopline.trust.authority import Authority
from stopline.trust.checks import needed_roles, signature_findings
from stopline.trust.documents import ATTESTATION, sign
from stopline.trust.keys import KeySigner

from .certkit import ALICE, HOUR, OTHER, TRUST, certificate, revocation

NOW = T0 + 2 * HOUR
AUTHORITY = Authority.build(
    TRUST, [certificate("alice", ALICE, T0), certificate("dana", OTHER, T0, roles=("viewer",))]
)


def attestation(
    command: str,
    binds: dict[str, Any],
    *,
    actor: str = "alice",
    item: str = "itm_1",
    key: KeySigner = ALICE,
) -> dict[str, Any]:
    body = {
        "kind": ATTESTATION,
        "v": 1,
        "command": command,
        "item": item,
        "actor": actor,
        "binds": binds,
        "at": format_time(T0 + HOUR),
    }
    return sign(body, key).to_plain()


def record(state: State, **data: Any) -> Item:
    return Item(
        id="itm_1",
        automation="pay",
        key="k1",
        state=state,
        version=4,
        seq=3,
        head="h3",
        created_at=T0,
        updated_at=T0,
        attempts=0,
        max_attempts=3,
        next_eligible_at=T0,
        data=freeze({"proposal": {"digest": "d1", "follows": "h0", "approvals": []}, **data}),
    )


def released(command: str, binds: dict[str, Any], **extra: Any) -> dict[str, Any]:
    at = attestation(command, binds, item=str(extra.get("item", "itm_1")))
    return {"command": command, "actor": "alice", "prev_hash": "h2", "attestation": at, **extra}


def fields(item: Item, head: Event | None = None, authority: Authority = AUTHORITY) -> list[str]:
    return [f.field for f in signature_findings(item, head, authority, NOW)]


def head_event(source: State, target: State) -> Event:
    return Event.sealed(
        item_id="itm_1",
        seq=3,
        at=T0,
        command="note",
        actor="alice",
        from_state=source,
        to_state=target,
        reasons=(),
        digests=freeze({}),
        detail=freeze({}),
        prev_hash="h2",
    )


def test_a_release_is_bound_to_the_head_it_was_given_on() -> None:
    """A retry alice signed on another head (an earlier stop of the same item) does not let
    the item out of this one; signed on this head, it does."""
    good = released("retry", {"head": "h2"})
    assert fields(record(State.OBSERVING, release=good)) == []
    old = released("retry", {"head": "h0"})
    assert fields(record(State.OBSERVING, release=old)) == ["release"]


def test_an_approval_that_released_the_item_is_bound_to_its_proposal() -> None:
    good = released("approve", {"proposal": "d1"})
    assert fields(record(State.OBSERVING, release=good)) == []
    other = released("approve", {"proposal": "d0"})
    assert fields(record(State.OBSERVING, release=other)) == ["release"]


def test_a_release_signed_for_another_item_does_not_release_this_one() -> None:
    """The release names the other item too, as a forger copying it would leave it."""
    copied = released("retry", {"head": "h2"}, item="itm_2")
    assert fields(record(State.OBSERVING, release=copied)) == ["release"]


def test_only_a_head_that_leaves_a_stop_needs_a_release() -> None:
    """No release: a finding when the head event let the item out of a stop into work; none
    for a step between two work states or a note inside a stop."""
    assert fields(record(State.OBSERVING), head_event(State.EXCEPTION, State.OBSERVING)) == [
        "release"
    ]
    assert fields(record(State.CLASSIFIED), head_event(State.OBSERVING, State.CLASSIFIED)) == []
    waiting = record(State.AWAITING_APPROVAL)
    assert fields(waiting, head_event(State.AWAITING_APPROVAL, State.AWAITING_APPROVAL)) == []


def approvals(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"digest": "d1", "follows": "h0", "approvals": list(entries)}


def test_every_approval_is_checked_while_the_item_may_act() -> None:
    """In ``approved`` and ``delivering`` an unsigned approval is a finding; in a state that
    does not act on it (``awaiting_approval``) it is not checked."""
    unsigned = approvals({"actor": "alice", "role": "approver"})
    for state in (State.APPROVED, State.DELIVERING):
        assert fields(record(state, proposal=unsigned)) == ["proposal.approvals"], state
    assert fields(record(State.AWAITING_APPROVAL, proposal=unsigned)) == []


def test_an_approval_counts_only_under_a_role_its_signer_holds() -> None:
    by_dana = attestation("approve", {"proposal": "d1"}, actor="dana", key=OTHER)
    entry = {"actor": "dana", "role": "approver", "attestation": by_dana}
    found = signature_findings(
        record(State.APPROVED, proposal=approvals(entry)), None, AUTHORITY, NOW
    )
    assert [f.field for f in found] == ["proposal.approvals"]
    assert "dana is not certified for approver" in found[0].text()


def test_an_approval_is_bound_to_the_proposal_it_counts_for() -> None:
    entry = {"actor": "alice", "role": "approver"}
    good = {**entry, "attestation": attestation("approve", {"proposal": "d1"})}
    assert fields(record(State.APPROVED, proposal=approvals(good))) == []
    stale = {**entry, "attestation": attestation("approve", {"proposal": "d0"})}
    assert fields(record(State.APPROVED, proposal=approvals(stale))) == ["proposal.approvals"]
    # an approval whose actor was cut out is nobody's, whoever released the item
    nobody = {"role": "approver", "attestation": good["attestation"]}
    release = released("approve", {"proposal": "d1"})
    item = record(State.APPROVED, proposal=approvals(nobody), release=release)
    assert fields(item) == ["proposal.approvals"]


def test_a_completed_record_stays_good_after_its_signers_key_is_revoked() -> None:
    """Signed while alice's key held and revoked since: a record that no longer acts is judged
    as of when it was signed, one that may still act is not."""
    revoked = Authority.build(
        TRUST, [certificate("alice", ALICE, T0), revocation("alice", T0 + HOUR + HOUR / 2)]
    )
    entry = {"actor": "alice", "role": "approver"}
    signed = {**entry, "attestation": attestation("approve", {"proposal": "d1"})}
    release = released("approve", {"proposal": "d1"})
    done = record(State.COMPLETED, proposal=approvals(signed), release=release)
    assert fields(done, authority=revoked) == []
    acting = replace(done, state=State.APPROVED)
    assert fields(acting, authority=revoked) == ["release", "proposal.approvals"]


def test_the_roles_a_command_counts_under() -> None:
    policy = Policy(delivery=DeliveryPolicy(publish_roles=("releaser",)))
    item = record(State.READY_FOR_REVIEW)
    assert needed_roles(item, Publish(actor="alice", packet="p1"), policy) == {"releaser"}
    assert needed_roles(None, "agent_propose", None) == {"agent"}
    assert needed_roles(None, Note(actor="alice", body="x"), policy) == frozenset()


def test_a_proposal_that_may_act_names_the_event_it_follows() -> None:
    """A proposal with no ``follows`` (its digest names no place in the history) is not acted
    on in signed mode: its signed approvals could be another proposal's of the same content."""
    placeless = {"digest": "d1", "approvals": []}
    assert fields(record(State.APPROVED, proposal=placeless)) == ["proposal.follows"]
    assert fields(record(State.COMPLETED, proposal=placeless)) == []
