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
from .authority import CERTIFY, REVOKE_KEY
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
