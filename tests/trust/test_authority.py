"""What a host in signed mode believes (stopline.trust.authority): certificates with their
history, and a signature judged live (before acting) or as of when it was made (a record)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from helpers import T0
from stopline.core.canonical import format_time
from stopline.trust.authority import (
    CERTIFY,
    REVOKE_KEY,
    Authority,
    attestation_problems,
    checkpoint_signer_problems,
    token_problems,
)
from stopline.trust.documents import (
    ATTESTATION,
    CHECKPOINT_PURPOSE,
    SIGN,
    SPEAK_FOR,
    TOKEN,
    Signed,
    sign,
)
from stopline.trust.keys import KeySigner

from .certkit import ALICE, HOUR, OTHER, ROOT, TRUST, certificate, revocation, signed_at
from .signedlab import SignedLab


def test_a_revoked_key_cannot_act_but_its_past_signatures_stand() -> None:
    """Before acting a key must be live and never revoked; a record signed before the
    revocation still verifies as a record, one signed after it does not."""
    authority = Authority.build(
        TRUST, [certificate("alice", ALICE, T0), revocation("alice", T0 + 2 * HOUR)]
    )
    before, after = signed_at(T0 + HOUR), signed_at(T0 + 3 * HOUR)
    now = T0 + 4 * HOUR
    live = authority.signer_problems(before, actor="alice", at=T0 + HOUR, now=now)
    assert live and "revoked" in live[0]
    assert authority.signer_problems(before, actor="alice", at=T0 + HOUR, now=now, live=False) == []
    late = authority.signer_problems(after, actor="alice", at=T0 + 3 * HOUR, now=now, live=False)
    assert late and "did not hold" in late[0]
    assert authority.actors(now) == {}


def test_certifying_a_key_again_supersedes_its_roles() -> None:
    """A new certificate of the same key replaces its roles from then on; what it held before
    stays what it held."""
    authority = Authority.build(
        TRUST,
        [
            certificate("alice", ALICE, T0, roles=("approver",)),
            certificate("alice", ALICE, T0 + HOUR, roles=("viewer",)),
        ],
    )
    assert authority.roles_at("alice", T0 + timedelta(minutes=30)) == {"approver"}
    assert authority.roles_at("alice", T0 + 2 * HOUR) == {"viewer"}
    assert authority.actors(T0 + 2 * HOUR)["alice"].roles == {"viewer"}
    assert [c.status(T0 + 2 * HOUR) for c in authority.history] == ["superseded", "live"]


def test_an_expired_certificate() -> None:
    """An expired key cannot act; what it signed while valid stands as a record."""
    authority = Authority.build(TRUST, [certificate("alice", ALICE, T0, expires=T0 + HOUR)])
    made = signed_at(T0 + timedelta(minutes=5))
    later = T0 + 2 * HOUR
    assert (
        "not valid now"
        in authority.signer_problems(made, actor="alice", at=T0 + timedelta(minutes=5), now=later)[
            0
        ]
    )
    assert (
        authority.signer_problems(
            made, actor="alice", at=T0 + timedelta(minutes=5), now=later, live=False
        )
        == []
    )
    assert authority.certificates[ALICE.public_key.fingerprint].status(later) == "expired"


def test_documents_not_signed_by_the_root_give_no_authority() -> None:
    """A certificate or revocation signed by another key, or altered after signing, is listed
    as a problem and changes nothing."""
    forged_cert = certificate("mallory", OTHER, T0, by=OTHER)
    altered = certificate("alice", ALICE, T0)
    altered[1]["body"]["roles"] = ["approver", "operator"]
    forged_revocation = revocation("bob", T0 + HOUR, by=OTHER)
    authority = Authority.build(
        TRUST, [certificate("bob", OTHER, T0), forged_cert, altered, forged_revocation]
    )
    assert set(authority.actors(T0 + 2 * HOUR)) == {"bob"}
    assert len(authority.problems) == 3
    assert all("not signed by a trust root key" in p for p in authority.problems)


def test_a_document_recorded_as_the_other_change_does_nothing() -> None:
    """A root-signed certificate recorded as a key revocation, or a revocation recorded as a
    certification, is a problem and changes nothing (each kind counts only as its change)."""
    _, cert = certificate("mallory", OTHER, T0)
    _, revoking = revocation("alice", T0 + HOUR)
    authority = Authority.build(
        TRUST, [certificate("alice", ALICE, T0), (REVOKE_KEY, cert), (CERTIFY, revoking)]
    )
    assert set(authority.actors(T0 + 2 * HOUR)) == {"alice"}
    assert len(authority.problems) == 2
    assert all("in the wrong place" in p for p in authority.problems)


def test_revoking_one_actor_leaves_every_other_actor_alone() -> None:
    """All of alice's keys revoked (no key named): bob, certified the same way, still acts."""
    bobs = KeySigner.generate()
    authority = Authority.build(
        TRUST,
        [
            certificate("alice", ALICE, T0),
            certificate("bob", bobs, T0),
            revocation("alice", T0 + HOUR),
        ],
    )
    assert set(authority.actors(T0 + 2 * HOUR)) == {"bob"}
    bob_signed = sign({"kind": ATTESTATION, "actor": "bob", "at": format_time(T0)}, bobs)
    now = T0 + 2 * HOUR
    assert authority.signer_problems(bob_signed, actor="bob", at=T0, now=now) == []


def test_a_revocation_dated_later_already_stops_acting() -> None:
    """A key whose revocation is dated after now (a revoking host's clock ahead) may no longer
    act: acting needs a key never revoked, whatever the date."""
    authority = Authority.build(
        TRUST, [certificate("alice", ALICE, T0), revocation("alice", T0 + 5 * HOUR)]
    )
    now = T0 + HOUR
    problems = authority.signer_problems(signed_at(now), actor="alice", at=now, now=now)
    assert problems and "revoked" in problems[0]
    cert = authority.certificate(ALICE.public_key)
    assert cert is not None and not cert.live(now)


def test_a_key_certified_for_another_purpose_is_no_actor() -> None:
    """Roles on a certificate whose purposes do not include signing (a server's speak_for, a
    checkpoint key) make nobody an actor with those roles."""
    server, checkpoints = KeySigner.generate(), KeySigner.generate()
    authority = Authority.build(
        TRUST,
        [
            certificate("server.web-1", server, T0, roles=("approver",), purposes=(SPEAK_FOR,)),
            certificate(
                "backup", checkpoints, T0, roles=("approver",), purposes=(CHECKPOINT_PURPOSE,)
            ),
        ],
    )
    now = T0 + HOUR
    assert authority.actors(now) == {}
    assert authority.roles_at("server.web-1", now) == frozenset()


def test_what_a_signer_check_refuses() -> None:
    """A signature altered after signing, one dated before its key's certificate was issued,
    and one by a key certified only for checkpoints, each fail the signer check (to act now)."""
    authority = Authority.build(TRUST, [certificate("alice", ALICE, T0)])
    now = T0 + 2 * HOUR
    good = signed_at(T0 + HOUR)
    assert authority.signer_problems(good, actor="alice", at=T0 + HOUR, now=now) == []
    plain = good.to_plain()
    plain["body"]["at"] = format_time(T0 + 90 * timedelta(minutes=1))
    altered = Signed.from_plain(plain)
    assert authority.signer_problems(altered, actor="alice", at=T0 + HOUR, now=now) == [
        "the signature does not verify"
    ]
    early = signed_at(T0 - HOUR)
    problems = authority.signer_problems(early, actor="alice", at=T0 - HOUR, now=now)
    assert problems and "not valid" in problems[0]
    keeper = KeySigner.generate()
    backups = Authority.build(
        TRUST, [certificate("alice", keeper, T0, purposes=(CHECKPOINT_PURPOSE,))]
    )
    by_keeper = signed_at(T0 + HOUR, keeper)
    problems = backups.signer_problems(by_keeper, actor="alice", at=T0 + HOUR, now=now)
    assert problems == [f"alice's key is not certified for {SIGN}"]


def test_only_an_attestation_authorises_a_command() -> None:
    """Another kind of document alice signed, holding every field an attestation holds, does
    not authorise her command."""
    authority = Authority.build(TRUST, [certificate("alice", ALICE, T0)])
    now = T0 + HOUR
    fields = {"command": "approve", "item": "itm_1", "actor": "alice", "at": format_time(now)}
    attested = sign({"kind": ATTESTATION, **fields}, ALICE)
    other = sign({"kind": "stopline.note", **fields}, ALICE)
    ask = {"command": "approve", "item": "itm_1", "actor": "alice", "binds": {}, "now": now}
    assert attestation_problems(authority, attested, **ask) == []
    assert "not an attestation" in attestation_problems(authority, other, **ask)[0]


def test_an_attestation_holds_for_its_own_command_and_the_roles_held() -> None:
    """alice's attestation of one command is no attestation of another; dana, certified a
    viewer, attests nothing that needs an approver, neither now nor as a record of then."""
    dana = KeySigner.generate()
    authority = Authority.build(
        TRUST, [certificate("alice", ALICE, T0), certificate("dana", dana, T0, roles=("viewer",))]
    )
    now = T0 + HOUR
    fields = {"kind": ATTESTATION, "item": "itm_1", "at": format_time(now)}
    noted = sign({**fields, "command": "note", "actor": "alice"}, ALICE)
    problems = attestation_problems(
        authority, noted, command="approve", item="itm_1", actor="alice", binds={}, now=now
    )
    assert any("attests command 'note'" in p for p in problems)
    by_dana = sign({**fields, "command": "approve", "actor": "dana"}, dana)
    for live in (True, False):
        problems = attestation_problems(
            authority,
            by_dana,
            command="approve",
            item="itm_1",
            actor="dana",
            binds={},
            now=now,
            roles=("approver",),
            live=live,
        )
        assert problems == ["dana is not certified for approver"], live


def test_a_signed_token_record_holds_for_its_own_token_only() -> None:
    authority = Authority.build(TRUST, [certificate("alice", ALICE, T0)])
    now = T0 + HOUR
    issued = sign(
        {"kind": TOKEN, "actor": "alice", "token": "a" * 64, "at": format_time(now)}, ALICE
    )
    assert token_problems(authority, issued, actor="alice", token_hash="a" * 64, now=now) == []
    other = token_problems(authority, issued, actor="alice", token_hash="b" * 64, now=now)
    assert other == ["the signed record names another token or actor"]
    for_bob = sign(
        {"kind": TOKEN, "actor": "bob", "token": "a" * 64, "at": format_time(now)}, ALICE
    )
    named = token_problems(authority, for_bob, actor="alice", token_hash="a" * 64, now=now)
    assert named == ["the signed record names another token or actor"]


def test_a_checkpoint_is_signed_by_a_root_key_or_a_key_certified_for_checkpoints() -> None:
    keeper = KeySigner.generate()
    authority = Authority.build(
        TRUST,
        [
            certificate("alice", ALICE, T0),
            certificate("backup", keeper, T0, roles=(), purposes=(CHECKPOINT_PURPOSE,)),
        ],
    )
    body = {"kind": "stopline.checkpoint", "at": format_time(T0 + HOUR)}
    assert checkpoint_signer_problems(authority, sign(body, ROOT)) == []
    assert checkpoint_signer_problems(authority, sign(body, keeper)) == []
    by_alice = checkpoint_signer_problems(authority, sign(body, ALICE))
    assert by_alice and "neither a trust root key nor certified for checkpoints" in by_alice[0]


def test_a_server_speaks_only_for_others_when_certified_to() -> None:
    """A signature by another actor's key counts only from a key certified speak_for that
    names itself as via."""
    server = KeySigner.generate()
    authority = Authority.build(
        TRUST,
        [
            certificate("alice", ALICE, T0),
            certificate("server.web-1", server, T0, roles=(), purposes=(SPEAK_FOR,)),
            certificate("bob", OTHER, T0),
        ],
    )
    now = T0 + HOUR
    via = signed_at(now, server, via="server.web-1")
    assert authority.signer_problems(via, actor="alice", at=now, now=now) == []
    no_via = signed_at(now, server)
    assert (
        "may not speak for alice"
        in authority.signer_problems(no_via, actor="alice", at=now, now=now)[0]
    )
    by_bob = signed_at(now, OTHER, via="bob")
    assert (
        "may not speak for alice"
        in authority.signer_problems(by_bob, actor="alice", at=now, now=now)[0]
    )


def test_rotating_a_key_keeps_verify_clean_for_what_it_signed(tmp_path: Path) -> None:
    """A payment alice and bob signed ran; after alice's key is rotated, verify in signed mode
    still finds every signature good (each key held when it signed)."""
    lab = SignedLab(tmp_path, f"sqlite:///{tmp_path / 'stopline.db'}")
    lab.certify_people()
    lab.work()
    with lab.store() as store:
        for who in ("alice", "bob"):
            lab.controller(store, who).approve(lab.item().id, proposal=lab.digest(), actor=who)
    lab.work()
    assert lab.item().state.value == "completed"
    new = tmp_path / "alice-2"
    lab.cli("keys", "generate", "--out", str(new))
    lab.cli("keys", "rotate", "alice", "--key", f"{new}.pub", "--root", str(lab.key_path("root")))
    report = lab.verify()
    assert report["ok"], report["problems"]
