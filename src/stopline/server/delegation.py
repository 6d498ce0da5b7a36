"""Signed mode on the server: it signs each person's command with its own key.

People who sign in to the inbox or call the API carry no private key. In signed mode the server
signs their commands with the key ``STOPLINE_SERVER_KEY`` names (a private key file, or a public
key whose private half is in ssh-agent), which the trust root certified with the purpose
``speak_for`` under the server's own actor name (``server.web-1``, say). Each attestation names
the signed-in actor and ``via`` the server; workers accept it only from a key so certified.

Without a server key in signed mode every command is refused ``signature_invalid`` and says why.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from ..store import Store
from ..trust.agent import Agent
from ..trust.authority import Authority, Trust
from ..trust.documents import SPEAK_FOR
from ..trust.keys import Signer
from ..trust.signers import SigningError, load_signer

SERVER_KEY_ENV = "STOPLINE_SERVER_KEY"
NO_SERVER_KEY = (
    f"signed mode: this server has no key to sign for the people who sign in: set "
    f"{SERVER_KEY_ENV} to a key the trust root certified with --purpose {SPEAK_FOR}, or sign "
    "the command yourself with the stopline CLI (--key)"
)


class DelegationError(ValueError):
    """The server key cannot be used (the message says why)."""


@dataclass(frozen=True)
class Delegation:
    """Who the server signs as: ``signer`` with ``via`` its certified actor name."""

    trust: Trust | None
    signer: Signer | None = None
    via: str | None = None

    @property
    def signed_mode(self) -> bool:
        return self.trust is not None


def server_delegation(
    store: Store, trust: Trust | None, environ: Mapping[str, str] | None = None
) -> Delegation:
    """The server's signer, checked against the trust root's certificates now. Raises
    :class:`DelegationError` for a key that is set but cannot speak for anyone."""
    env = os.environ if environ is None else environ
    spec = (env.get(SERVER_KEY_ENV) or "").strip()
    if trust is None or not spec:
        return Delegation(trust)
    try:
        signer = load_signer(spec, agent=Agent.from_env(env))
    except SigningError as exc:
        raise DelegationError(f"{SERVER_KEY_ENV}: {exc}") from exc
    authority = Authority.build(trust, store.registry().signed)
    cert = authority.certificate(signer.public_key)
    if cert is None or SPEAK_FOR not in cert.purposes or not cert.live(datetime.now(UTC)):
        raise DelegationError(
            f"{SERVER_KEY_ENV}: {signer.public_key.fingerprint} is not certified to speak for "
            f"the people who sign in (stopline keys certify server.NAME --key PUB --purpose "
            f"{SPEAK_FOR} --root ROOTKEY)"
        )
    return Delegation(trust, signer, cert.actor)
