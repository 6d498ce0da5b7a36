"""A database writer with no key re-plays, moves or re-orders root-signed documents in the
registry chain (signed mode, both stores, real ``stopline`` worker processes).

The documents are real: the trust root signed them. What the writer changes is only where they
sit in the chain, appended again at its end with a correct hash and ledger entry (which any
writer can compute) or the chain rewritten in another order. A certificate's authority must not
depend on its place in the chain: a revoked key stays revoked and a superseded certificate stays
superseded, whatever order the chain holds them in.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from helpers import T0
from stopline.controller import utcnow
from stopline.core.commands import Approve
from stopline.store import raw
from stopline.trust import admin
from stopline.trust.authority import Authority
from stopline.trust.checks import attest

from .certkit import ALICE, HOUR, TRUST, certificate, revocation
from .signedlab import SignedLab
from .test_attacks import named, signed_approval, stopped_for_signature, unsigned

CERTIFY = "certify"


def documents_of(lab: SignedLab, actor: str, change: str) -> list[dict[str, Any]]:
    """The details of ``actor``'s registry events of ``change``, in chain order."""
    with lab.store() as store:
        return [
            e["detail"]
            for e in store.actor_events()
            if (e["actor"], e["change"]) == (actor, change)
        ]


def append_again(lab: SignedLab, actor: str, change: str, detail: dict[str, Any]) -> None:
    """Append a registry event at the end of the chain with its correct hash and ledger entry,
    as any database writer can (no key is needed for either)."""
    with lab.store() as store, raw.writing(store) as cur:
        raw.append_registry_event(store, cur, actor, change, detail, utcnow())


def test_a_revoked_key_is_not_revived_by_its_certificate_replayed(
    make_lab: Callable[..., SignedLab],
) -> None:
    """alice and bob approve, the root revokes alice's key before the worker runs; the writer
    appends alice's own root-signed certificate again at the end of the chain. The worker must
    still stop the item (``signature_invalid``), and nothing runs."""
    lab = make_lab()
    signed_approval(lab, "alice")
    assert signed_approval(lab, "bob").state.value == "approved"
    lab.cli("keys", "revoke", "alice", "--root", str(lab.key_path("root")))
    (certificate,) = documents_of(lab, "alice", CERTIFY)
    append_again(lab, "alice", CERTIFY, certificate)
    lab.work()
    stopped_for_signature(lab)
    assert any("revoked" in f["detail"] for f in named(lab.verify(), lab.item().id))


def test_a_superseded_certificate_replayed_gives_back_no_role(
    make_lab: Callable[..., SignedLab],
) -> None:
    """The root certifies bob's key again with the viewer role only; bob (still holding his key)
    signs an approval anyway, which a host in signed mode refuses, so the writer records it
    with stopline's own unsigned code, then appends bob's first (approver) certificate again.
    The worker must not run the payment on the approval of a viewer."""
    lab = make_lab(approvals=1)
    with lab.store() as store:
        admin.certify(
            store,
            lab.keys["root"],
            "bob",
            lab.keys["bob"].public_key,
            roles=("viewer",),
            now=utcnow() + timedelta(microseconds=1),
        )
        refused = lab.controller(store, "bob").approve(
            lab.item().id, proposal=lab.digest(), actor="bob"
        )
    assert refused.outcome.value == "refused", refused
    first = documents_of(lab, "bob", CERTIFY)[0]
    assert first["body"]["roles"] == ["approver", "operator"]
    _approve_as_viewer(lab, "bob")
    append_again(lab, "bob", CERTIFY, first)
    lab.work()
    assert lab.executed() == [], "the execute hook ran on a viewer's approval"
    assert lab.remote_objects() == []
    assert lab.item().state.value in ("exception", "awaiting_approval"), lab.item().state


def _approve_as_viewer(lab: SignedLab, who: str) -> None:
    """Record ``who``'s approval, signed with ``who``'s own key, with stopline's own code on a
    host in unsigned mode (which reads no certificate): what the writer does with it."""
    with lab.store() as store:
        attacker = unsigned(store)
        attacker.add_actor(who, ["approver"])
        item = lab.item()
        command = Approve(actor=who, digest=lab.digest())
        signature = attest(item, command, lab.keys[who], utcnow(), roles=["approver"]).to_plain()
        done = attacker.run(item.id, Approve(who, lab.digest(), attestation=signature))
    assert done.state is not None and done.state.value == "approved", done


# --- the same, on the fold alone (no database) ------------------------------------------------


def test_a_revocation_held_before_its_certificate_in_the_chain_still_revokes() -> None:
    """The chain rewritten (every hash recomputed) with alice's revocation moved in front of
    her certificate: she is revoked all the same."""
    moved = [revocation("alice", T0 + HOUR), certificate("alice", ALICE, T0)]
    authority = Authority.build(TRUST, moved)
    assert authority.actors(T0 + 2 * HOUR) == {}
    (cert,) = authority.history
    assert cert.revoked_at == T0 + HOUR


def test_a_certificate_moved_after_the_one_that_superseded_it_stays_superseded() -> None:
    """alice's approver certificate moved after the viewer one that replaced it: the one issued
    last holds, wherever the chain holds it."""
    first = certificate("alice", ALICE, T0, roles=("approver",))
    second = certificate("alice", ALICE, T0 + HOUR, roles=("viewer",))
    for chain in ([first, second], [second, first], [first, second, first]):
        authority = Authority.build(TRUST, chain)
        assert authority.actors(T0 + 2 * HOUR)["alice"].roles == {"viewer"}, chain
        assert authority.roles_at("alice", T0 + HOUR / 2) == {"approver"}


def test_a_document_recorded_twice_counts_once_and_is_a_problem() -> None:
    """A root-signed certificate appended again after its revocation revives nothing, and the
    copy is named (verify reports it)."""
    cert = certificate("alice", ALICE, T0)
    authority = Authority.build(TRUST, [cert, revocation("alice", T0 + HOUR), cert])
    assert authority.actors(T0 + 2 * HOUR) == {}
    assert len(authority.history) == 1
    assert len(authority.problems) == 1 and "recorded again" in authority.problems[0]


def test_a_certificate_issued_after_a_revocation_is_not_revoked_by_it() -> None:
    """A revocation does not reach a certificate the root issued after it (a key certified
    again once revoked). Held after the revocation in the chain, the certificate issued first
    is still revoked; moved in front of it, the later one is revoked too (a re-ordering can
    only take authority away)."""
    chain = [
        certificate("alice", ALICE, T0),
        revocation("alice", T0 + HOUR),
        certificate("alice", ALICE, T0 + 2 * HOUR),
    ]
    assert set(Authority.build(TRUST, chain).actors(T0 + 3 * HOUR)) == {"alice"}
    reversed_chain = Authority.build(TRUST, chain[::-1])
    assert reversed_chain.actors(T0 + 3 * HOUR) == {}


def test_two_certificates_of_one_key_issued_at_the_same_instant_neither_holds() -> None:
    """Which of two certificates issued at one instant came last, only the chain's order could
    say, and whoever writes the database chooses that order: an approver and a viewer
    certificate of one key at the same instant give the key no role in either order."""
    approver = certificate("alice", ALICE, T0, roles=("approver",))
    viewer = certificate("alice", ALICE, T0, roles=("viewer",))
    for chain in ([approver, viewer], [viewer, approver]):
        authority = Authority.build(TRUST, chain)
        assert authority.actors(T0 + HOUR) == {}, chain
        assert authority.roles_at("alice", T0) == set(), chain
        assert len(authority.problems) == 2 and "same instant" in authority.problems[0]
