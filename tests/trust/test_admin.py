"""The registry changes a trust root signs (``trust/admin.py``): certifying a key, revoking one
and rotating an actor's keys, written to a real store and read back as a host in signed mode
reads them, on both stores (the ``store`` fixture). Each test was missing while a mutant of
the module passed the others."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from stopline.core.names import InvalidName
from stopline.store import Store
from stopline.trust.admin import AdminError, certify, revoke, rotate
from stopline.trust.authority import Authority, Trust
from stopline.trust.documents import SIGN
from stopline.trust.env import CHECKPOINT_PURPOSE
from stopline.trust.keys import KeySigner

ROOT, K1, K2, K3 = (KeySigner.generate() for _ in range(4))
TRUST = Trust((ROOT.public_key,))
NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)
HOUR = timedelta(hours=1)


def authority(store: Store) -> Authority:
    return Authority.build(TRUST, store.registry().signed)


def live_keys(store: Store, actor: str, at: datetime = NOW) -> dict[str, tuple[list, list]]:
    return {
        c.key.fingerprint: (sorted(c.roles), sorted(c.purposes))
        for c in authority(store).of_actor(actor)
        if c.live(at)
    }


def test_a_certificate_is_read_back_with_its_roles_purposes_and_end(store: Store) -> None:
    signed = certify(
        store,
        ROOT,
        "alice",
        K1.public_key,
        roles=["approver", "operator", "approver"],
        purposes=[SIGN, SIGN],
        now=NOW,
        valid_for=HOUR,
    )
    assert list(signed.body["roles"]) == ["approver", "operator"]
    assert list(signed.body["purposes"]) == [SIGN]
    assert signed.body["fingerprint"] == K1.public_key.fingerprint
    assert signed.body["expires_at"] == "2026-12-04T13:00:00.000000Z"
    assert live_keys(store, "alice") == {
        K1.public_key.fingerprint: (["approver", "operator"], [SIGN])
    }
    assert live_keys(store, "alice", NOW + 2 * HOUR) == {}


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"purposes": ["sign", "launch"]}, ValueError),
        ({"roles": ["Approver!"]}, ValueError),
        ({"actor": "bad name"}, InvalidName),
    ],
)
def test_a_certificate_with_an_unknown_purpose_a_bad_role_or_name_is_not_signed(
    store: Store, change: dict, error: type[Exception]
) -> None:
    before = len(store.registry().signed)
    arguments = {"actor": "alice", "roles": ["approver"], "purposes": [SIGN], **change}
    actor = arguments.pop("actor")
    with pytest.raises(error):
        certify(store, ROOT, actor, K1.public_key, now=NOW, **arguments)
    assert len(store.registry().signed) == before


def test_a_revocation_names_a_checked_actor(store: Store) -> None:
    with pytest.raises(InvalidName):
        revoke(store, ROOT, "bad name", now=NOW)
    certify(store, ROOT, "alice", K1.public_key, roles=["approver"], now=NOW)
    revoke(store, ROOT, "alice", key=K1.public_key.fingerprint, now=NOW + HOUR)
    assert live_keys(store, "alice", NOW + 2 * HOUR) == {}


def test_rotation_certifies_the_union_of_the_live_keys_and_revokes_every_one(store: Store) -> None:
    certify(store, ROOT, "alice", K1.public_key, roles=["approver"], now=NOW)
    certify(
        store,
        ROOT,
        "alice",
        K2.public_key,
        roles=["operator"],
        purposes=[SIGN, CHECKPOINT_PURPOSE],
        now=NOW,
    )
    made, revoked = rotate(
        store, ROOT, authority(store), "alice", K3.public_key, now=NOW + HOUR, valid_for=HOUR
    )
    assert made.body["expires_at"] == "2026-12-04T14:00:00.000000Z"
    assert len(revoked) == 2
    after = live_keys(store, "alice", NOW + HOUR)
    assert after == {
        K3.public_key.fingerprint: (["approver", "operator"], sorted([SIGN, CHECKPOINT_PURPOSE]))
    }


def test_rotation_leaves_a_dead_key_alone_and_refuses_what_it_cannot_do(store: Store) -> None:
    with pytest.raises(AdminError, match="no live certified key"):
        rotate(store, ROOT, authority(store), "alice", K3.public_key, now=NOW)
    certify(store, ROOT, "alice", K1.public_key, roles=["viewer"], now=NOW, valid_for=HOUR)
    certify(store, ROOT, "alice", K2.public_key, roles=["approver"], now=NOW)
    with pytest.raises(AdminError, match="already alice's live key"):
        rotate(store, ROOT, authority(store), "alice", K2.public_key, now=NOW)
    later = NOW + 2 * HOUR  # K1's certificate has ended: it is not carried over
    made, revoked = rotate(store, ROOT, authority(store), "alice", K3.public_key, now=later)
    assert list(made.body["roles"]) == ["approver"]
    assert [r.body["key"] for r in revoked] == [K2.public_key.fingerprint]
