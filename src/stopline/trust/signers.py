"""Where a person's signature comes from: a private key file, or ssh-agent.

``--key`` (or ``STOPLINE_KEY``) names a private key file (OpenSSH, as ``ssh-keygen -t ed25519``
writes it, or PKCS#8 PEM), or a public key (a ``.pub`` file or the ``ssh-ed25519 AAAA...`` line)
whose private half is in ssh-agent. Without one, the agent is asked for a key the trust root
certified to the actor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from .agent import Agent, AgentError, AgentSigner, signer_in_agent
from .authority import Authority
from .documents import SIGN
from .env import KEY_ENV as KEY_ENV
from .keys import KEY_TYPE, KeyError_, KeySigner, PublicKey, Signer


class SigningError(ValueError):
    """No usable key: the message says what was wrong and what to do."""


def load_signer(
    spec: str,
    *,
    agent: Agent | None = None,
    passphrase: Callable[[str], str | None] | None = None,
) -> Signer:
    """The signer ``spec`` names (a private key file, or a public key held by ``agent``).
    ``passphrase(path)`` is asked for a protected key (``None``: do not ask)."""
    text = spec.strip()
    if text.startswith(KEY_TYPE + " "):
        try:
            public = PublicKey.parse(text)
        except KeyError_ as exc:
            raise SigningError(f"{text[:40]}: not a readable ssh-ed25519 public key") from exc
        return _in_agent(public, agent, text[:40])
    path = Path(text).expanduser()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SigningError(f"cannot read the key {path}: {exc.strerror or exc}") from exc
    if b"PRIVATE KEY" in data:
        return _private(path, passphrase)
    try:
        public = PublicKey.parse(data.decode("utf-8", "replace"))
    except KeyError_ as exc:
        raise SigningError(f"{path}: neither a private key nor an ssh-ed25519 public key") from exc
    return _in_agent(public, agent, str(path))


def _private(path: Path, passphrase: Callable[[str], str | None] | None) -> KeySigner:
    try:
        return KeySigner.load(path)
    except KeyError_ as exc:
        if "password" not in str(exc).lower() and "encrypted" not in str(exc).lower():
            raise SigningError(str(exc)) from exc
    secret = passphrase(str(path)) if passphrase is not None else None
    if secret is None:
        raise SigningError(
            f"{path} is protected by a passphrase: add it to ssh-agent (ssh-add {path}) and "
            f"pass the public key (--key {path}.pub), or let the agent find it"
        )
    try:
        return KeySigner.load(path, secret)
    except KeyError_ as exc:
        raise SigningError(f"{path}: wrong passphrase, or {exc}") from exc


def _in_agent(key: PublicKey, agent: Agent | None, named: str) -> Signer:
    if agent is None:
        raise SigningError(
            f"{named} is a public key: its private key must be in ssh-agent, and SSH_AUTH_SOCK "
            "is not set"
        )
    try:
        return signer_in_agent(agent, key)
    except AgentError as exc:
        raise SigningError(str(exc)) from exc


def agent_signer_for(
    agent: Agent,
    authority: Authority,
    actor: str,
    now: datetime,
    purposes: Sequence[str] = (SIGN,),
) -> Signer | None:
    """A key of the agent's that the trust root certified to ``actor`` (live, for one of
    ``purposes``), or ``None``."""
    try:
        held = agent.ed25519_keys()
    except AgentError:
        return None
    for key in held:
        cert = authority.certificate(key)
        if (
            cert is not None
            and cert.actor == actor
            and cert.live(now)
            and cert.purposes & set(purposes)
        ):
            return AgentSigner(agent, key)
    return None
