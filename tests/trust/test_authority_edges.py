"""The edges of what a host in signed mode believes: the instants a certificate starts and
stops holding, revocations that meet other revocations and re-certified keys, and the fields
of an attestation, a checkpoint and a trust root that each must be checked on its own."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from helpers import T0
from stopline.core.canonical import format_time
from stopline.trust.authority import Authority, Trust, attestation_problems
from stopline.trust.authority import checkpoint_signer_problems as checkpoint_problems
from stopline.trust.documents import ATTESTATION, CERTIFICATE, CHECKPOINT_PURPOSE, Signed, sign
from stopline.trust.keys import KeySigner

from .certkit import ALICE, HOUR, OTHER, ROOT, TRUST, certificate, revocation, signed_at

SECOND = timedelta(seconds=1)


def held(authority: Authority, at: datetime) -> set[str]:
    return set(authority.actors(at))


def test_a_certificate_holds_from_its_issue_to_just_before_its_end() -> None:
    """Issued at T0 and expiring at T0 + 2h: it holds at T0 exactly, no longer at T0 + 2h;
    revoked at T0 + 1h, it no longer holds at T0 + 1h; superseded at T0 + 1h (the same key
    certified again), the first certificate no longer holds then, the second does."""
    expiring = Authority.build(TRUST, [certificate("alice", ALICE, T0, expires=T0 + 2 * HOUR)])
    (cert,) = expiring.history
    assert cert.valid_at(T0) and cert.status(T0) == "live"
    assert not cert.valid_at(T0 + 2 * HOUR) and cert.status(T0 + 2 * HOUR) == "expired"
    assert held(expiring, T0) == {"alice"} and held(expiring, T0 + 2 * HOUR) == set()

    revoked = Authority.build(
        TRUST, [certificate("alice", ALICE, T0), revocation("alice", T0 + HOUR)]
    )
    (cert,) = revoked.history
    assert cert.valid_at(T0 + HOUR - SECOND) and not cert.valid_at(T0 + HOUR)

    again = Authority.build(
        TRUST,
        [certificate("alice", ALICE, T0), certificate("alice", ALICE, T0 + HOUR, ("viewer",))],
    )
    first, second = again.history
    assert first.superseded_at == T0 + HOUR
    assert first.valid_at(T0 + HOUR - SECOND) and not first.valid_at(T0 + HOUR)
    assert second.valid_at(T0 + HOUR)
    assert again.roles_at("alice", T0 + HOUR) == {"viewer"}


def test_a_certificate_dated_ahead_is_not_yet_valid_until_its_instant() -> None:
    authority = Authority.build(TRUST, [certificate("alice", ALICE, T0 + HOUR)])
    (cert,) = authority.history
    assert cert.status(T0) == "not yet valid"
    assert cert.status(T0 + HOUR) == "live"


def test_a_token_issue_in_the_chain_is_no_problem_of_the_authority() -> None:
    """Token issues are checked where a token is used: folding the registry's signed changes
    skips every change that is not a certificate or a revocation, even one holding a signed
    document."""
    issued = sign({"kind": "stopline.token", "actor": "alice", "token": "a" * 64}, ALICE)
    authority = Authority.build(
        TRUST, [certificate("alice", ALICE, T0), ("token_issue", issued.to_plain())]
    )
    assert authority.problems == []
    assert held(authority, T0 + HOUR) == {"alice"}


def test_revoking_the_old_holder_of_a_key_leaves_its_new_holder_alone() -> None:
    """A key certified to alice, then to bob (superseding alice's certificate): revoking
    alice's keys revokes her certificate in the history and leaves bob's, the latest, live."""
    authority = Authority.build(
        TRUST,
        [
            certificate("alice", ALICE, T0),
            certificate("bob", ALICE, T0 + HOUR),
            revocation("alice", T0 + 2 * HOUR),
        ],
    )
    assert held(authority, T0 + 3 * HOUR) == {"bob"}
    latest = authority.certificate(ALICE.public_key)
    assert latest is not None and latest.actor == "bob" and not latest.revoked
    assert [c.revoked for c in authority.history] == [True, False]


def test_a_certificate_for_a_name_outside_the_safe_alphabet_gives_no_actor() -> None:
    authority = Authority.build(TRUST, [certificate("al\u0456ce", ALICE, T0)])  # Cyrillic i
    assert held(authority, T0 + HOUR) == set()
    assert len(authority.problems) == 1 and "malformed" in authority.problems[0]


def test_a_second_revocation_never_moves_the_first_one() -> None:
    """Revoked at T0 + 1h, then again at T0 + 5h: a signature made at T0 + 2h does not hold
    as a record; the first revocation stands."""
    authority = Authority.build(
        TRUST,
        [
            certificate("alice", ALICE, T0),
            revocation("alice", T0 + HOUR),
            revocation("alice", T0 + 5 * HOUR),
        ],
    )
    (cert,) = authority.history
    assert cert.revoked_at == T0 + HOUR
    late = signed_at(T0 + 2 * HOUR)
    problems = authority.signer_problems(
        late, actor="alice", at=T0 + 2 * HOUR, now=T0 + 6 * HOUR, live=False
    )
    assert problems and "did not hold" in problems[0]


def test_revoking_one_key_of_an_actor_leaves_her_other_keys() -> None:
    authority = Authority.build(
        TRUST,
        [
            certificate("alice", ALICE, T0),
            certificate("alice", OTHER, T0),
            revocation("alice", T0 + HOUR, key=ALICE.public_key.fingerprint),
        ],
    )
    assert held(authority, T0 + 2 * HOUR) == {"alice"}
    now = T0 + 2 * HOUR
    assert authority.signer_problems(signed_at(now, OTHER), actor="alice", at=now, now=now) == []
    revoked = authority.signer_problems(signed_at(now, ALICE), actor="alice", at=now, now=now)
    assert revoked and "was revoked" in revoked[0]


def test_a_certificate_signed_by_alice_is_no_attestation() -> None:
    """A document of another kind that alice signed and that holds every field an
    attestation holds: refused for its kind alone."""
    authority = Authority.build(TRUST, [certificate("alice", ALICE, T0)])
    now = T0 + HOUR
    fields = {"command": "approve", "item": "itm_1", "actor": "alice", "at": format_time(now)}
    other = sign({"kind": CERTIFICATE, **fields}, ALICE)
    ask: dict[str, Any] = {
        "command": "approve",
        "item": "itm_1",
        "actor": "alice",
        "binds": {},
        "now": now,
    }
    assert attestation_problems(authority, other, **ask) == [
        f"a {CERTIFICATE} is not an attestation"
    ]


def test_an_attestation_of_one_item_authorises_nothing_on_another() -> None:
    authority = Authority.build(TRUST, [certificate("alice", ALICE, T0)])
    now = T0 + HOUR
    signed = signed_at(now, command="approve", item="itm_1")
    ask: dict[str, Any] = {"command": "approve", "actor": "alice", "binds": {}, "now": now}
    assert attestation_problems(authority, signed, item="itm_1", **ask) == []
    assert attestation_problems(authority, signed, item="itm_2", **ask) == [
        "it attests item 'itm_1', not 'itm_2'"
    ]


def test_an_attestation_bound_to_another_value_is_refused() -> None:
    authority = Authority.build(TRUST, [certificate("alice", ALICE, T0)])
    now = T0 + HOUR
    signed = signed_at(now, command="approve", item="itm_1", binds={"proposal": "d1"})
    ask: dict[str, Any] = {"command": "approve", "item": "itm_1", "actor": "alice", "now": now}
    assert attestation_problems(authority, signed, binds={"proposal": "d1"}, **ask) == []
    assert attestation_problems(authority, signed, binds={"proposal": "d2"}, **ask) == [
        "it is bound to another proposal"
    ]


def test_a_record_is_judged_by_the_roles_held_when_it_was_signed() -> None:
    """alice approved at T0 + 1h as an approver; at T0 + 2h she was made a viewer. As a
    record (``live=False``) her approval holds; acting on it now does not. bob, made an
    approver only at T0 + 2h, signed at T0 + 1h as a viewer: his record does not hold."""
    authority = Authority.build(
        TRUST,
        [
            certificate("alice", ALICE, T0),
            certificate("bob", OTHER, T0, roles=("viewer",)),
            certificate("alice", ALICE, T0 + 2 * HOUR, roles=("viewer",)),
            certificate("bob", OTHER, T0 + 2 * HOUR),
        ],
    )
    then, now = T0 + HOUR, T0 + 3 * HOUR

    def problems(actor: str, key: KeySigner, *, live: bool) -> list[str]:
        body = {"kind": ATTESTATION, "command": "approve", "item": "itm_1", "actor": actor}
        doc = sign({**body, "at": format_time(then)}, key)
        return attestation_problems(
            authority,
            doc,
            command="approve",
            item="itm_1",
            actor=actor,
            binds={},
            now=now,
            roles=("approver",),
            live=live,
        )

    assert problems("alice", ALICE, live=False) == []
    assert "alice is not certified for approver" in problems("alice", ALICE, live=True)
    assert problems("bob", OTHER, live=False) == ["bob is not certified for approver"]


def test_a_checkpoint_whose_signature_does_not_verify_is_refused_even_from_a_root_key() -> None:
    authority = Authority.build(TRUST, [])
    plain = sign({"kind": "stopline.checkpoint", "at": format_time(T0)}, ROOT).to_plain()
    plain["body"]["at"] = format_time(T0 + HOUR)
    assert checkpoint_problems(authority, Signed.from_plain(plain)) == [
        "the signature does not verify"
    ]


def test_a_checkpoint_is_judged_by_the_certificate_that_held_when_it_was_taken() -> None:
    """keeper certified for checkpoints from T0 and, from T0 + 2h, for signing only: a
    checkpoint taken at T0 + 1h holds, one taken at T0 + 3h does not. And the other way
    round for a key certified for checkpoints only from T0 + 2h."""
    keeper, late = KeySigner.generate(), KeySigner.generate()
    authority = Authority.build(
        TRUST,
        [
            certificate("backup", keeper, T0, roles=(), purposes=(CHECKPOINT_PURPOSE,)),
            certificate("backup", keeper, T0 + 2 * HOUR, roles=()),
            certificate("backup", late, T0, roles=()),
            certificate("backup", late, T0 + 2 * HOUR, roles=(), purposes=(CHECKPOINT_PURPOSE,)),
        ],
    )

    def taken(at: datetime, key: KeySigner) -> list[str]:
        body = {"kind": "stopline.checkpoint", "at": format_time(at)}
        return checkpoint_problems(authority, sign(body, key))

    assert taken(T0 + HOUR, keeper) == []
    assert taken(T0 + 3 * HOUR, keeper) != []
    assert taken(T0 + HOUR, late) != []
    assert taken(T0 + 3 * HOUR, late) == []


def test_a_certificate_naming_no_purposes_is_for_signing_only() -> None:
    """No ``purposes`` in the certificate: the key signs its actor's own commands and may
    not speak for anyone else."""
    server = KeySigner.generate()
    authority = Authority.build(
        TRUST,
        [certificate("alice", ALICE, T0), certificate("web", server, T0, purposes=None)],
    )
    now = T0 + HOUR
    assert held(authority, now) == {"alice", "web"}
    via = signed_at(now, server, via="web")
    problems = authority.signer_problems(via, actor="alice", at=now, now=now)
    assert problems == ["signed by web, who may not speak for alice"]


def test_a_trust_root_file_whose_path_names_the_key_type_is_read_as_a_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ssh-ed25519-roots.pub"
    path.write_text(ROOT.public_key.line + "\n", "utf-8")
    trust = Trust.from_env({"STOPLINE_TRUST_ROOT": str(path)})
    assert trust is not None and trust.fingerprints == TRUST.fingerprints


@pytest.mark.parametrize("value", ["", "   "])
def test_no_trust_root_is_unsigned_mode(value: str) -> None:
    assert Trust.from_env({"STOPLINE_TRUST_ROOT": value}) is None
