"""Signing on the command line: ``--key PATH`` (or ``STOPLINE_KEY``, or ssh-agent), the host's
mode, and the controller a person's command runs on.

In signed mode (``STOPLINE_TRUST_ROOT`` set on this host) every person's command is signed with
the actor's key: the file ``--key`` names (a private key, or a public key whose private half is in
ssh-agent), else a key in ssh-agent that the trust root certified to the actor. In unsigned mode
``--key`` is accepted and not used (a note says so).
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Sequence

from ..clock import utcnow
from ..controller import Controller
from ..store import Store
from ..trust.agent import Agent
from ..trust.authority import TRUST_ROOT_ENV, Authority, Trust, TrustError
from ..trust.documents import SIGN
from ..trust.keys import Signer
from ..trust.signers import KEY_ENV, SigningError, agent_signer_for, load_signer
from .errors import UsageError

SIGNED, UNSIGNED = "signed", "unsigned"
SECURITY_DOC = "docs/security.md"
UNSIGNED_TEXT = (
    "mode: unsigned. The database is the trust boundary: whoever can write it can approve. "
    f"Signed mode needs {TRUST_ROOT_ENV} on every host (see {SECURITY_DOC})."
)


def host_trust() -> Trust | None:
    """This host's trust root (``None``: unsigned mode); a malformed one is exit 2."""
    try:
        return Trust.from_env()
    except TrustError as exc:
        raise UsageError(str(exc)) from exc


def mode(trust: Trust | None) -> str:
    return SIGNED if trust is not None else UNSIGNED


def mode_text(trust: Trust | None) -> str:
    if trust is None:
        return UNSIGNED_TEXT
    roots = ", ".join(sorted(trust.fingerprints))
    return (
        f"mode: signed. Authority comes only from certificates signed by the trust root "
        f"({roots}); every person's command is signed."
    )


def note(text: str) -> None:
    print(f"stopline: {text}", file=sys.stderr)


def _ask_passphrase(path: str) -> str | None:
    if not sys.stdin.isatty():
        return None
    return getpass.getpass(f"passphrase for {path}: ")


def key_spec(args: argparse.Namespace) -> str | None:
    given: str | None = getattr(args, "key", None) or os.environ.get(KEY_ENV) or None
    return given


def named_signer(spec: str) -> Signer:
    """The signer a ``--key``-like option names; exit 2 when it cannot sign."""
    try:
        return load_signer(spec, agent=Agent.from_env(), passphrase=_ask_passphrase)
    except SigningError as exc:
        raise UsageError(str(exc)) from exc


def signer_for(
    args: argparse.Namespace,
    store: Store,
    trust: Trust | None,
    actor: str | None,
    purposes: Sequence[str] = (SIGN,),
) -> Signer | None:
    """The key a person's command is signed with (``None`` in unsigned mode, or when none is
    found: the controller then refuses the command ``signature_invalid`` and says how to sign)."""
    spec = key_spec(args)
    if trust is None:
        if spec:
            note(f"unsigned mode (no {TRUST_ROOT_ENV} on this host): the key is not used")
        return None
    if spec:
        return named_signer(spec)
    agent = Agent.from_env()
    if agent is None or not actor:
        return None
    authority = Authority.build(trust, store.registry().signed)
    return agent_signer_for(agent, authority, actor, utcnow(), purposes)


def controller_for(store: Store, args: argparse.Namespace, actor: str | None) -> Controller:
    """The controller a person's command runs on: this host's mode, the actor's signer."""
    trust = host_trust()
    return Controller(store, trust=trust, signer=signer_for(args, store, trust, actor))
