"""Signed documents: a canonical body, the public key that signed it, the signature.

The signature is Ed25519 over the RFC 8785 canonical JSON of the body (UTF-8), so anyone can
check one from ``stopline show --json`` with any JCS implementation and any Ed25519 library.

Kinds of body (``kind``):

* ``stopline.certificate``: a trust root says that a key belongs to an actor, with roles and
  purposes (``sign``: the actor's own commands; ``speak_for``: a server that signs for the
  actors who sign in to it; ``checkpoint``: checkpoints of the chain heads);
* ``stopline.revocation``: a trust root withdraws one key of an actor, or all of them;
* ``stopline.attestation``: an actor (or a server speaking for one) authorises one command on
  one item, bound to what it authorises;
* ``stopline.token``: an actor's API token was issued by that actor;
* ``stopline.checkpoint``: the head of every chain at one moment.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.canonical import CanonicalError, canonical_json
from ..core.frozen import freeze, thaw
from .env import CHECKPOINT_PURPOSE as CHECKPOINT_PURPOSE
from .env import PURPOSES as PURPOSES
from .env import SIGN as SIGN
from .env import SPEAK_FOR as SPEAK_FOR
from .keys import KeyError_, PublicKey, Signer

CERTIFICATE = "stopline.certificate"
REVOCATION = "stopline.revocation"
ATTESTATION = "stopline.attestation"
TOKEN = "stopline.token"
CHECKPOINT = "stopline.checkpoint"
VERSION = 1


class MalformedDocument(ValueError):
    """A signed document that does not have the shape of one."""


def signing_bytes(body: Mapping[str, Any]) -> bytes:
    return canonical_json(body).encode("utf-8")


@dataclass(frozen=True)
class Signed:
    body: Mapping[str, Any]
    key: str  # the OpenSSH line of the key that signed
    signature: str  # standard base64 of the 64-byte Ed25519 signature

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def public_key(self) -> PublicKey:
        return PublicKey.parse(self.key)

    def valid(self) -> bool:
        """The signature is the named key's, over exactly this body."""
        try:
            signature = base64.b64decode(self.signature, validate=True)
            return self.public_key.verify(signature, signing_bytes(self.body))
        except (KeyError_, CanonicalError, binascii.Error, ValueError, TypeError):
            return False

    def to_plain(self) -> dict[str, Any]:
        return {"body": thaw(self.body), "key": self.key, "signature": self.signature}

    @classmethod
    def from_plain(cls, doc: Any) -> Signed:
        if not isinstance(doc, Mapping):
            raise MalformedDocument("a signed document is an object")
        body, key, signature = doc.get("body"), doc.get("key"), doc.get("signature")
        if not isinstance(body, Mapping) or not isinstance(key, str):
            raise MalformedDocument("a signed document has a body and a key")
        if not isinstance(signature, str):
            raise MalformedDocument("a signed document has a signature")
        return cls(freeze(dict(body)), key, signature)


def sign(body: Mapping[str, Any], signer: Signer) -> Signed:
    plain = thaw(body)
    signature = signer.sign(signing_bytes(plain))
    return Signed(freeze(plain), signer.public_key.line, base64.b64encode(signature).decode())
