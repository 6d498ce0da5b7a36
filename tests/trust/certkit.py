"""Certificates, revocations and attestations signed with throwaway keys, for the tests of what
a host in signed mode believes (``stopline.trust.authority``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from stopline.core.canonical import format_time
from stopline.trust.authority import CERTIFY, REVOKE_KEY, Trust
from stopline.trust.documents import ATTESTATION, CERTIFICATE, REVOCATION, SIGN, Signed, sign
from stopline.trust.keys import KeySigner

ROOT, ALICE, OTHER = KeySigner.generate(), KeySigner.generate(), KeySigner.generate()
TRUST = Trust((ROOT.public_key,))
HOUR = timedelta(hours=1)


def certificate(
    actor: str,
    key: KeySigner,
    at: Any,
    roles: tuple[str, ...] = ("approver",),
    purposes: tuple[str, ...] | None = (SIGN,),
    expires: Any = None,
    by: KeySigner = ROOT,
) -> tuple[str, dict[str, Any]]:
    body = {
        "kind": CERTIFICATE,
        "v": 1,
        "actor": actor,
        "key": key.public_key.line,
        "fingerprint": key.public_key.fingerprint,
        "roles": list(roles),
        "purposes": None if purposes is None else list(purposes),
        "issued_at": format_time(at),
        "expires_at": None if expires is None else format_time(expires),
    }
    if purposes is None:  # a certificate that names no purposes
        del body["purposes"]
    return CERTIFY, sign(body, by).to_plain()


def revocation(actor: str, at: Any, key: str | None = None, by: KeySigner = ROOT) -> Any:
    body = {"kind": REVOCATION, "v": 1, "actor": actor, "key": key, "at": format_time(at)}
    return REVOKE_KEY, sign(body, by).to_plain()


def signed_at(at: Any, key: KeySigner = ALICE, **more: Any) -> Signed:
    return sign({"kind": ATTESTATION, "actor": "alice", "at": format_time(at), **more}, key)
