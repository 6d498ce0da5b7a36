"""Signed mode: the trust root a host is configured with, and the authority it derives.

A host is in signed mode when it is configured with a trust root (``STOPLINE_TRUST_ROOT``: a
path to a file of ``ssh-ed25519`` lines, or the lines themselves). Nothing in the database can
switch a host into or out of signed mode.

In signed mode an actor holds exactly the roles of its certificates: each a
``stopline.certificate`` signed by a root key, recorded in the registry chain, not revoked (by a
``stopline.revocation`` signed by a root key) and not expired. Rows in the ``actors`` table and
registry events without such a signature give no authority at all.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.canonical import CanonicalError, parse_time
from ..core.records import Actor
from .documents import (
    ATTESTATION,
    CERTIFICATE,
    CHECKPOINT_PURPOSE,
    REVOCATION,
    SIGN,
    SPEAK_FOR,
    TOKEN,
    MalformedDocument,
    Signed,
)
from .keys import KeyError_, PublicKey, read_public_keys

TRUST_ROOT_ENV = "STOPLINE_TRUST_ROOT"
CERTIFY = "certify"  # registry changes that carry signed documents
REVOKE_KEY = "revoke_key"
SIGNED_CHANGES = (CERTIFY, REVOKE_KEY)


class TrustError(ValueError):
    """The trust root configuration cannot be read."""


@dataclass(frozen=True)
class Trust:
    """The trust root of this host: one or more public keys."""

    roots: tuple[PublicKey, ...]

    @property
    def fingerprints(self) -> frozenset[str]:
        return frozenset(k.fingerprint for k in self.roots)

    @classmethod
    def from_text(cls, text: str) -> Trust:
        try:
            roots = read_public_keys(text)
        except KeyError_ as exc:
            raise TrustError(f"{TRUST_ROOT_ENV}: {exc}") from exc
        if not roots:
            raise TrustError(f"{TRUST_ROOT_ENV} names no ssh-ed25519 key")
        return cls(tuple(roots))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Trust | None:
        """The host's trust root, or ``None`` (unsigned mode)."""
        value = (environ if environ is not None else os.environ).get(TRUST_ROOT_ENV, "").strip()
        if not value:
            return None
        if value.startswith("ssh-ed25519 "):
            return cls.from_text(value)
        path = Path(value).expanduser()
        try:
            return cls.from_text(path.read_text("utf-8"))
        except OSError as exc:
            raise TrustError(f"{TRUST_ROOT_ENV}: cannot read {path}: {exc}") from exc


@dataclass(frozen=True)
class Certified:
    actor: str
    key: PublicKey
    roles: frozenset[str]
    purposes: frozenset[str]
    issued_at: datetime
    expires_at: datetime | None
    revoked: bool = False

    def live(self, at: datetime) -> bool:
        return (
            not self.revoked
            and self.issued_at <= at
            and (self.expires_at is None or at < self.expires_at)
        )


@dataclass
class Authority:
    """What a host in signed mode believes, from the registry's signed documents."""

    trust: Trust
    certificates: dict[str, Certified] = field(default_factory=dict)  # by key fingerprint
    problems: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, trust: Trust, documents: Iterable[tuple[str, Mapping[str, Any]]]) -> Authority:
        """``documents``: ``(change, detail)`` of the registry events that carry signed
        documents, in chain order."""
        authority = cls(trust)
        for change, detail in documents:
            if change not in SIGNED_CHANGES:
                continue  # token issues are checked where a token is used
            try:
                signed = Signed.from_plain(detail)
            except MalformedDocument as exc:
                authority.problems.append(f"{change}: {exc}")
                continue
            if not signed.valid() or signed.public_key.fingerprint not in trust.fingerprints:
                authority.problems.append(f"{change}: not signed by a trust root key")
                continue
            try:
                if change == CERTIFY and signed.kind == CERTIFICATE:
                    authority._certify(signed.body)
                elif change == REVOKE_KEY and signed.kind == REVOCATION:
                    authority._revoke(signed.body)
                else:
                    authority.problems.append(f"{change}: a {signed.kind} in the wrong place")
            except (KeyError, KeyError_, TypeError, ValueError, CanonicalError) as exc:
                authority.problems.append(f"{change}: malformed {signed.kind}: {exc}")
        return authority

    def _certify(self, body: Mapping[str, Any]) -> None:
        key = PublicKey.parse(str(body["key"]))
        expires = body.get("expires_at")
        self.certificates[key.fingerprint] = Certified(
            actor=str(body["actor"]),
            key=key,
            roles=frozenset(body.get("roles", ())),
            purposes=frozenset(body.get("purposes", (SIGN,))),
            issued_at=parse_time(str(body["issued_at"])),
            expires_at=None if expires is None else parse_time(str(expires)),
        )

    def _revoke(self, body: Mapping[str, Any]) -> None:
        actor, fingerprint = str(body["actor"]), body.get("key")
        for fp, cert in list(self.certificates.items()):
            if cert.actor == actor and (fingerprint is None or fp == fingerprint):
                self.certificates[fp] = Certified(
                    cert.actor,
                    cert.key,
                    cert.roles,
                    cert.purposes,
                    cert.issued_at,
                    cert.expires_at,
                    revoked=True,
                )

    def actors(self, now: datetime) -> dict[str, Actor]:
        """Every actor with a live signing certificate, holding exactly its certified roles."""
        roles: dict[str, set[str]] = {}
        for cert in self.certificates.values():
            if SIGN in cert.purposes and cert.live(now):
                roles.setdefault(cert.actor, set()).update(cert.roles)
        return {name: Actor(name, frozenset(r), True) for name, r in roles.items()}

    def certificate(self, key: PublicKey) -> Certified | None:
        return self.certificates.get(key.fingerprint)

    def signer_problems(
        self, signed: Signed, *, actor: str, at: datetime, now: datetime, purpose: str = SIGN
    ) -> list[str]:
        """Why ``signed`` is not a live signature of ``actor`` (or of a server certified to
        speak for actors) made at ``at``; empty when it is."""
        if not signed.valid():
            return ["the signature does not verify"]
        cert = self.certificate(signed.public_key)
        if cert is None:
            return [f"key {signed.public_key.fingerprint} is not certified by the trust root"]
        problems = []
        if cert.revoked:
            problems.append(f"key {cert.key.fingerprint} of {cert.actor} was revoked")
        elif not cert.live(at) or not cert.live(now):
            problems.append(f"key {cert.key.fingerprint} of {cert.actor} is not valid now")
        if cert.actor == actor:
            if purpose not in cert.purposes:
                problems.append(f"{cert.actor}'s key is not certified for {purpose}")
        elif SPEAK_FOR not in cert.purposes or signed.body.get("via") != cert.actor:
            problems.append(f"signed by {cert.actor}, who may not speak for {actor}")
        return problems


def attestation_problems(
    authority: Authority,
    signed: Any,
    *,
    command: str,
    item: str,
    actor: str,
    binds: Mapping[str, Any],
    now: datetime,
    roles: Sequence[str] = (),
) -> list[str]:
    """Why ``signed`` does not authorise ``actor``'s ``command`` on ``item`` bound to ``binds``
    (each key of ``binds`` must be in the attestation with that value); empty when it does."""
    if signed is None:
        return [f"{actor}'s {command} carries no signature"]
    try:
        doc = signed if isinstance(signed, Signed) else Signed.from_plain(signed)
    except MalformedDocument as exc:
        return [str(exc)]
    body = doc.body
    problems = []
    if doc.kind != ATTESTATION:
        problems.append(f"a {doc.kind or 'document'} is not an attestation")
    for name, expected in (("command", command), ("item", item), ("actor", actor)):
        if body.get(name) != expected:
            problems.append(f"it attests {name} {body.get(name)!r}, not {expected!r}")
    attested = body.get("binds") or {}
    for name, expected in binds.items():
        if attested.get(name) != expected:
            problems.append(f"it is bound to another {name}")
    try:
        at = parse_time(str(body.get("at")))
    except (ValueError, CanonicalError):
        return [*problems, "it has no valid time"]
    problems += authority.signer_problems(doc, actor=actor, at=at, now=now)
    held = authority.actors(now).get(actor)
    missing = set(roles) - (set(held.roles) if held else set())
    if missing:
        problems.append(f"{actor} is not certified for {', '.join(sorted(missing))}")
    return problems


def token_problems(
    authority: Authority, signed: Any, *, actor: str, token_hash: str, now: datetime
) -> list[str]:
    """Why a token's issue record does not show that ``actor`` issued it."""
    if signed is None:
        return ["the token was issued without a signature"]
    try:
        doc = signed if isinstance(signed, Signed) else Signed.from_plain(signed)
    except MalformedDocument as exc:
        return [str(exc)]
    problems = []
    if doc.kind != TOKEN or doc.body.get("actor") != actor or doc.body.get("token") != token_hash:
        problems.append("the signed record names another token or actor")
    try:
        at = parse_time(str(doc.body.get("at")))
    except (ValueError, CanonicalError):
        return [*problems, "it has no valid time"]
    return problems + authority.signer_problems(doc, actor=actor, at=at, now=now)


def checkpoint_signer_problems(authority: Authority, doc: Signed, now: datetime) -> list[str]:
    if not doc.valid():
        return ["the signature does not verify"]
    if doc.public_key.fingerprint in authority.trust.fingerprints:
        return []
    cert = authority.certificate(doc.public_key)
    if cert is None or CHECKPOINT_PURPOSE not in cert.purposes:
        return ["not signed by a trust root key or a key certified for checkpoints"]
    return [] if not cert.revoked else ["the checkpoint key was revoked"]
