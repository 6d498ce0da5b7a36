"""Registry changes a trust root signs: certifying an actor's key, revoking it, rotating it.

Each is one registry event carrying the signed document, so every host in signed mode derives
the same authority from the chain, and nobody without a root key can add to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from ..core.canonical import format_time
from ..core.names import check_actor_name, check_role
from ..store import Store
from .authority import CERTIFY, REVOKE_KEY, Authority
from .documents import CERTIFICATE, PURPOSES, REVOCATION, SIGN, VERSION, Signed, sign
from .keys import PublicKey, Signer


def certify(
    store: Store,
    root: Signer,
    actor: str,
    key: PublicKey,
    *,
    roles: Sequence[str] = (),
    purposes: Sequence[str] = (SIGN,),
    now: datetime,
    valid_for: timedelta | None = None,
) -> Signed:
    """Certify ``key`` as ``actor``'s, with ``roles`` and ``purposes``, signed by ``root``."""
    name = check_actor_name(actor)
    for purpose in purposes:
        if purpose not in PURPOSES:
            raise ValueError(f"unknown purpose {purpose!r}; one of {', '.join(PURPOSES)}")
    body = {
        "kind": CERTIFICATE,
        "v": VERSION,
        "actor": name,
        "key": key.line,
        "fingerprint": key.fingerprint,
        "roles": sorted({check_role(r) for r in roles}),
        "purposes": sorted(set(purposes)),
        "issued_at": format_time(now),
        "expires_at": None if valid_for is None else format_time(now + valid_for),
    }
    signed = sign(body, root)
    store.append_registry(name, CERTIFY, signed.to_plain(), now)
    return signed


def revoke(
    store: Store, root: Signer, actor: str, *, key: str | None = None, now: datetime
) -> Signed:
    """Revoke one key of ``actor`` (by fingerprint), or every key when ``key`` is None."""
    name = check_actor_name(actor)
    body = {"kind": REVOCATION, "v": VERSION, "actor": name, "key": key, "at": format_time(now)}
    signed = sign(body, root)
    store.append_registry(name, REVOKE_KEY, signed.to_plain(), now)
    return signed


class AdminError(ValueError):
    """A registry change the trust root should not sign (nothing is written)."""


def rotate(
    store: Store,
    root: Signer,
    authority: Authority,
    actor: str,
    key: PublicKey,
    *,
    now: datetime,
    valid_for: timedelta | None = None,
) -> tuple[Signed, list[Signed]]:
    """Certify ``key`` as ``actor``'s with the roles and purposes of its live keys, then revoke
    each of those keys: the certificate first, so the actor is never without one."""
    name = check_actor_name(actor)
    old = [c for c in authority.of_actor(name) if c.live(now)]
    if not old:
        raise AdminError(f"{name} has no live certified key to rotate (stopline keys certify)")
    if any(c.key == key for c in old):
        raise AdminError(f"{key.fingerprint} is already {name}'s live key")
    roles = sorted(set().union(*(c.roles for c in old)))
    purposes = sorted(set().union(*(c.purposes for c in old)))
    made = certify(
        store, root, name, key, roles=roles, purposes=purposes, now=now, valid_for=valid_for
    )
    revoked = [revoke(store, root, name, key=c.key.fingerprint, now=now) for c in old]
    return made, revoked
