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
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from ..core.canonical import CanonicalError, format_time, parse_time
from ..core.names import check_actor_name
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
    signing_bytes,
)
from .env import TRUST_ROOT_ENV as TRUST_ROOT_ENV
from .keys import KeyError_, PublicKey, read_public_keys

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
    """One certificate of a key, as the trust root signed it, and when it stopped holding:
    ``revoked_at`` (a root-signed revocation) or ``superseded_at`` (the root certified the same
    key again, with other roles or purposes)."""

    actor: str
    key: PublicKey
    roles: frozenset[str]
    purposes: frozenset[str]
    issued_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None = None
    superseded_at: datetime | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def valid_at(self, at: datetime) -> bool:
        """Whether the certificate held at ``at`` (what a signature made then needed)."""
        return (
            self.issued_at <= at
            and (self.expires_at is None or at < self.expires_at)
            and (self.revoked_at is None or at < self.revoked_at)
            and (self.superseded_at is None or at < self.superseded_at)
        )

    def live(self, at: datetime) -> bool:
        """Whether it holds at ``at`` and was never revoked (what acting now needs)."""
        return not self.revoked and self.valid_at(at)

    def status(self, now: datetime) -> str:
        if self.revoked:
            return "revoked"
        if self.superseded_at is not None:
            return "superseded"
        if self.expires_at is not None and now >= self.expires_at:
            return "expired"
        if now < self.issued_at:
            return "not yet valid"
        return "live"


@dataclass
class Authority:
    """What a host in signed mode believes, from the registry's signed documents."""

    trust: Trust
    certificates: dict[str, Certified] = field(default_factory=dict)  # latest, by fingerprint
    history: list[Certified] = field(default_factory=list)  # every certificate, in chain order
    problems: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, trust: Trust, documents: Iterable[tuple[str, Mapping[str, Any]]]) -> Authority:
        """``documents``: ``(change, detail)`` of the registry events that carry signed
        documents, in chain order.

        What a document means does not depend on where the chain holds it: anyone who can
        write the database can append a root-signed document again with a correct hash, or
        rewrite the chain in another order. So a document recorded twice counts once (and is
        a problem), the latest certificate of a key is the one issued last (of two issued at
        the same instant neither holds, and that is a problem), and a revocation revokes every
        matching certificate issued at or before its time, wherever either sits in the chain, as well
        as any the chain held before it."""
        authority = cls(trust)
        revocations: list[tuple[int, str, Any, datetime]] = []
        seen: set[bytes] = set()
        for change, detail in documents:
            if change not in SIGNED_CHANGES:
                continue  # token issues are checked where a token is used
            try:
                signed = Signed.from_plain(detail)
            except MalformedDocument as exc:
                authority.problems.append(f"{change}: {exc}")
                continue
            if not signed.valid() or signed.public_key.fingerprint not in trust.fingerprints:
                authority.problems.append(
                    f"{change} of {_subject(signed)}: not signed by a trust root key"
                )
                continue
            once = signing_bytes(signed.body)
            if once in seen:
                authority.problems.append(
                    f"{change} of {_subject(signed)}: the same signed document recorded again "
                    "(a replay: it counts once)"
                )
                continue
            seen.add(once)
            try:
                if change == CERTIFY and signed.kind == CERTIFICATE:
                    authority.history.append(_certificate(signed.body))
                elif change == REVOKE_KEY and signed.kind == REVOCATION:
                    body = signed.body
                    at = parse_time(str(body["at"]))
                    held = len(authority.history)  # the certificates the chain held before it
                    revocations.append((held, str(body["actor"]), body.get("key"), at))
                else:
                    authority.problems.append(f"{change}: a {signed.kind} in the wrong place")
            except (KeyError, KeyError_, TypeError, ValueError, CanonicalError) as exc:
                authority.problems.append(f"{change}: malformed {signed.kind}: {exc}")
        authority._settle(revocations)
        return authority

    def _settle(self, revocations: Sequence[tuple[int, str, Any, datetime]]) -> None:
        """Each key's certificates superseded in the order they were issued, then revoked."""
        by_key: dict[str, list[int]] = {}
        for n, cert in enumerate(self.history):
            by_key.setdefault(cert.key.fingerprint, []).append(n)
        for fingerprint, numbers in by_key.items():
            issued = sorted(numbers, key=lambda n: self.history[n].issued_at)
            for earlier, later in pairwise(issued):
                successor = self.history[later].issued_at
                self.history[earlier] = replace(self.history[earlier], superseded_at=successor)
            tied = {
                n
                for pair in pairwise(issued)
                if self.history[pair[0]].issued_at == self.history[pair[1]].issued_at
                for n in pair
            }
            for n in sorted(tied):  # which came last only the chain's order could say: neither
                cert = self.history[n]
                self.history[n] = replace(cert, superseded_at=cert.issued_at)
                self.problems.append(
                    f"certify of {cert.actor}: two certificates of one key issued at the same "
                    f"instant ({format_time(cert.issued_at)}); neither holds"
                )
            by_key[fingerprint] = issued
        for held, actor, fingerprint, at in revocations:
            for n, cert in enumerate(self.history):
                if cert.actor != actor or fingerprint not in (None, cert.key.fingerprint):
                    continue
                if (n < held or cert.issued_at <= at) and (
                    cert.revoked_at is None or at < cert.revoked_at
                ):
                    self.history[n] = replace(cert, revoked_at=at)  # the earliest one stands
        self.certificates = {f: self.history[issued[-1]] for f, issued in by_key.items()}

    def actors(self, now: datetime) -> dict[str, Actor]:
        """Every actor with a live signing certificate, holding exactly its certified roles."""
        roles: dict[str, set[str]] = {}
        for cert in self.certificates.values():
            if SIGN in cert.purposes and cert.live(now):
                roles.setdefault(cert.actor, set()).update(cert.roles)
        return {name: Actor(name, frozenset(r), True) for name, r in roles.items()}

    def roles_at(self, actor: str, at: datetime) -> frozenset[str]:
        """The roles ``actor``'s signing certificates gave at ``at`` (revoked or not since)."""
        held: set[str] = set()
        for cert in self.history:
            if cert.actor == actor and SIGN in cert.purposes and cert.valid_at(at):
                held |= cert.roles
        return frozenset(held)

    def certificate(self, key: PublicKey) -> Certified | None:
        """The latest certificate of ``key``."""
        return self.certificates.get(key.fingerprint)

    def certificate_at(self, key: PublicKey, at: datetime) -> Certified | None:
        """The certificate of ``key`` that held at ``at``."""
        for cert in reversed(self.history):
            if cert.key.fingerprint == key.fingerprint and cert.valid_at(at):
                return cert
        return None

    def of_actor(self, actor: str) -> list[Certified]:
        """The latest certificate of each key ever certified to ``actor``."""
        return [c for c in self.certificates.values() if c.actor == actor]

    def signer_problems(
        self,
        signed: Signed,
        *,
        actor: str,
        at: datetime,
        now: datetime,
        purpose: str = SIGN,
        live: bool = True,
    ) -> list[str]:
        """Why ``signed`` is not a signature of ``actor`` (or of a server certified to speak
        for actors) made at ``at``; empty when it is. ``live``: the key must also hold now and
        never have been revoked (before acting); otherwise it must have held at ``at`` (a
        record of the past, whose key may have been rotated since)."""
        if not signed.valid():
            return ["the signature does not verify"]
        latest = self.certificate(signed.public_key)
        if latest is None:
            return [f"key {signed.public_key.fingerprint} is not certified by the trust root"]
        problems = []
        if live:
            cert = latest
            if latest.revoked:
                problems.append(f"key {latest.key.fingerprint} of {latest.actor} was revoked")
            elif not latest.live(at) or not latest.live(now):
                problems.append(f"key {latest.key.fingerprint} of {latest.actor} is not valid now")
        else:
            held = self.certificate_at(signed.public_key, at)
            if held is None:
                return [f"key {latest.key.fingerprint} of {latest.actor} did not hold at {at}"]
            cert = held
        if cert.actor == actor:
            if purpose not in cert.purposes:
                problems.append(f"{cert.actor}'s key is not certified for {purpose}")
        elif SPEAK_FOR not in cert.purposes or signed.body.get("via") != cert.actor:
            problems.append(f"signed by {cert.actor}, who may not speak for {actor}")
        return problems


def _certificate(body: Mapping[str, Any]) -> Certified:
    """The certificate a root-signed ``stopline.certificate`` body gives."""
    expires = body.get("expires_at")
    return Certified(
        actor=check_actor_name(str(body["actor"])),
        key=PublicKey.parse(str(body["key"])),
        roles=frozenset(str(r) for r in body.get("roles", ())),
        purposes=frozenset(str(p) for p in body.get("purposes", (SIGN,))),
        issued_at=parse_time(str(body["issued_at"])),
        expires_at=None if expires is None else parse_time(str(expires)),
    )


def _subject(signed: Signed) -> str:
    return str(signed.body.get("actor", "?"))


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
    live: bool = True,
) -> list[str]:
    """Why ``signed`` does not authorise ``actor``'s ``command`` on ``item`` bound to ``binds``
    (each key of ``binds`` must be in the attestation with that value); empty when it does.
    ``live``: as :meth:`Authority.signer_problems` (the key must hold now, to act on it)."""
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
    problems += authority.signer_problems(doc, actor=actor, at=at, now=now, live=live)
    if live:
        held = authority.actors(now).get(actor)
        holds = held.roles if held is not None else frozenset()
    else:
        holds = authority.roles_at(actor, at)
    missing = set(roles) - holds
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


def checkpoint_signer_problems(authority: Authority, doc: Signed) -> list[str]:
    """Why ``doc`` is not a checkpoint signed by a trust root key, or by a key certified for
    checkpoints when the checkpoint was taken (the key may have been rotated since)."""
    if not doc.valid():
        return ["the signature does not verify"]
    if doc.public_key.fingerprint in authority.trust.fingerprints:
        return []
    try:
        at = parse_time(str(doc.body.get("at")))
    except (ValueError, CanonicalError):
        return ["the checkpoint has no valid time"]
    cert = authority.certificate_at(doc.public_key, at)
    if cert is None or CHECKPOINT_PURPOSE not in cert.purposes:
        return [
            f"key {doc.public_key.fingerprint} is neither a trust root key nor certified for "
            "checkpoints when the checkpoint was taken"
        ]
    return []
