"""``stopline keys``: the trust root, people's keys, and the certificates that bind them.

``create-root`` and ``generate`` write a new Ed25519 key pair (OpenSSH format, the private key
mode 0600, the public key beside it as ``PATH.pub``) and touch no database. ``certify``,
``revoke`` and ``rotate`` append a document signed by a root key (``--root``) to the registry
chain; ``list`` shows every certificate and its status.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..clock import utcnow
from ..core.names import InvalidName, check_actor_name, check_role, lookalike
from ..store import Store
from ..trust import admin
from ..trust.authority import TRUST_ROOT_ENV, Authority, Certified, Trust
from ..trust.documents import SIGN, MalformedDocument, Signed
from ..trust.keys import KeyError_, KeySigner, PublicKey, Signer
from . import render
from .errors import UsageError
from .signing import host_trust, mode, mode_text, named_signer, note

if TYPE_CHECKING:
    from .output import Out

Handler = Callable[[argparse.Namespace, Store, "Out"], int]
EXIT_OK, EXIT_REFUSED = 0, 3


# --- new key pairs (no database) -------------------------------------------------------------


def _new_pair(path: str, comment: str) -> KeySigner:
    target = Path(path).expanduser()
    public = target.with_name(target.name + ".pub")
    for existing in (target, public):
        if existing.exists():
            raise UsageError(f"{existing} exists: a key is never overwritten")
    if not target.parent.is_dir():
        raise UsageError(f"{target.parent} is not a folder")
    signer = KeySigner.generate()
    signer.save(target, comment)
    return signer


def create_root(args: argparse.Namespace, out: Out) -> int:
    signer = _new_pair(args.out, args.comment or "stopline-root")
    line = f"{signer.public_key.line} {args.comment or 'stopline-root'}"
    out.doc(
        {
            "private_key": args.out,
            "public_key": f"{args.out}.pub",
            "fingerprint": signer.public_key.fingerprint,
            "trust_root": line,
        },
        f"root key written to {args.out} (mode 0600; keep it off the hosts that run stopline)\n"
        f"public key: {args.out}.pub ({signer.public_key.fingerprint})\n"
        f"put this in {TRUST_ROOT_ENV} on every worker and server host (the line itself, or the "
        f"path of a file holding it):\n  {line}",
    )
    return EXIT_OK


def generate(args: argparse.Namespace, out: Out) -> int:
    signer = _new_pair(args.out, args.comment or "")
    out.doc(
        {
            "private_key": args.out,
            "public_key": f"{args.out}.pub",
            "fingerprint": signer.public_key.fingerprint,
        },
        f"key written to {args.out} (mode 0600) and {args.out}.pub "
        f"({signer.public_key.fingerprint})\n"
        f"have it certified: stopline keys certify NAME --key {args.out}.pub --role ROLE "
        "--root ROOTKEY",
    )
    return EXIT_OK


# --- certificates in the registry ------------------------------------------------------------


def public_key(spec: str) -> PublicKey:
    """A public key from its ``ssh-ed25519`` line or a file holding it."""
    text = spec.strip()
    if not text.startswith("ssh-ed25519 "):
        path = Path(text).expanduser()
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read the public key {path}: {exc}") from exc
        if "PRIVATE KEY" in text:
            raise UsageError(f"{path} is a private key: give its public key ({path}.pub)")
    try:
        return PublicKey.parse(text)
    except KeyError_ as exc:
        raise UsageError(str(exc)) from exc


def _root(args: argparse.Namespace, trust: Trust | None) -> Signer:
    root = named_signer(args.root)
    if trust is None:
        note(
            f"this host is in unsigned mode: the certificate takes effect on hosts whose "
            f"{TRUST_ROOT_ENV} holds {root.public_key.fingerprint}"
        )
    elif root.public_key.fingerprint not in trust.fingerprints:
        raise UsageError(
            f"{root.public_key.fingerprint} is not a trust root of this host ({TRUST_ROOT_ENV}): "
            "no host would accept what it signs"
        )
    return root


def authority_of(store: Store, trust: Trust | None) -> Authority:
    """What the registry's certificates say: checked against ``trust``, or in unsigned mode
    taken as recorded (any signer accepted, for listing only)."""
    documents = store.registry().signed
    if trust is None:
        signers = []
        for _, detail in documents:
            try:
                signers.append(Signed.from_plain(detail).public_key)
            except (MalformedDocument, KeyError_):
                continue
        trust = Trust(tuple(signers))
    return Authority.build(trust, documents)


def _days(value: int | None) -> timedelta | None:
    if value is None:
        return None
    if value < 1:
        raise UsageError("--days must be at least 1")
    return timedelta(days=value)


def _cert_doc(cert: Certified, now: Any) -> dict[str, Any]:
    return {
        "actor": cert.actor,
        "fingerprint": cert.key.fingerprint,
        "key": cert.key.line,
        "roles": sorted(cert.roles),
        "purposes": sorted(cert.purposes),
        "issued_at": cert.issued_at.isoformat(),
        "expires_at": cert.expires_at.isoformat() if cert.expires_at else None,
        "status": cert.status(now),
    }


def certify(args: argparse.Namespace, store: Store, out: Out) -> int:
    try:
        name = check_actor_name(args.name)
        roles = sorted({check_role(r) for r in args.role or ()})
    except InvalidName as exc:
        raise UsageError(str(exc)) from exc
    purposes = sorted(set(args.purpose or (SIGN,)))
    key = public_key(args.key)
    trust = host_trust()
    root = _root(args, trust)
    now = utcnow()
    authority = authority_of(store, trust)
    current = authority.certificate(key)
    if current is not None and current.actor != name and not current.revoked:
        raise UsageError(f"{key.fingerprint} is certified to {current.actor}: revoke it first")
    similar = lookalike(name, {c.actor for c in authority.history})
    if similar is not None:
        raise UsageError(f"actor name {name!r} looks like the certified actor {similar!r}")
    signed = admin.certify(
        store,
        root,
        name,
        key,
        roles=roles,
        purposes=purposes,
        now=now,
        valid_for=_days(args.days),
    )
    body = signed.body
    out.doc(
        {
            "certified": name,
            "fingerprint": key.fingerprint,
            "roles": roles,
            "purposes": purposes,
            "expires_at": body.get("expires_at"),
            "signed_by": root.public_key.fingerprint,
        },
        f"certified {key.fingerprint} as {name}: roles {', '.join(roles) or '(none)'}; "
        f"purposes {', '.join(purposes)}"
        + (f"; expires {body['expires_at']}" if body.get("expires_at") else "")
        + f"\nsigned by the root key {root.public_key.fingerprint}",
    )
    return EXIT_OK


def _fingerprint(spec: str) -> str:
    text = spec.strip()
    return text if text.startswith("SHA256:") else public_key(text).fingerprint


def revoke(args: argparse.Namespace, store: Store, out: Out) -> int:
    try:
        name = check_actor_name(args.name)
    except InvalidName as exc:
        raise UsageError(str(exc)) from exc
    fingerprint = _fingerprint(args.key) if args.key else None
    trust = host_trust()
    root = _root(args, trust)
    live = [c for c in authority_of(store, trust).of_actor(name) if not c.revoked]
    if fingerprint is not None:
        live = [c for c in live if c.key.fingerprint == fingerprint]
    if not live:
        what = f"{name}'s key {fingerprint}" if fingerprint else f"a key of {name}"
        out.doc(
            {"decision": "refused", "reasons": ["actor_unknown"], "actor": name},
            f"refused: no unrevoked certificate of {what}",
        )
        return EXIT_REFUSED
    admin.revoke(store, root, name, key=fingerprint, now=utcnow())
    revoked = sorted(c.key.fingerprint for c in live)
    out.doc(
        {"revoked": name, "fingerprints": revoked},
        f"revoked {name}'s key{'s' if len(revoked) > 1 else ''} {', '.join(revoked)}",
    )
    return EXIT_OK


def rotate(args: argparse.Namespace, store: Store, out: Out) -> int:
    try:
        name = check_actor_name(args.name)
    except InvalidName as exc:
        raise UsageError(str(exc)) from exc
    key = public_key(args.key)
    trust = host_trust()
    root = _root(args, trust)
    authority = authority_of(store, trust)
    current = authority.certificate(key)
    if current is not None and current.actor != name and not current.revoked:
        raise UsageError(f"{key.fingerprint} is certified to {current.actor}")
    try:
        made, revoked = admin.rotate(
            store, root, authority, name, key, now=utcnow(), valid_for=_days(args.days)
        )
    except admin.AdminError as exc:
        raise UsageError(str(exc)) from exc
    old = [str(r.body["key"]) for r in revoked]
    out.doc(
        {
            "rotated": name,
            "fingerprint": key.fingerprint,
            "revoked": old,
            "roles": list(made.body["roles"]),
            "purposes": list(made.body["purposes"]),
        },
        f"certified {key.fingerprint} as {name} (roles {', '.join(made.body['roles']) or '(none)'});"
        f" revoked {', '.join(old)}",
    )
    return EXIT_OK


def list_keys(args: argparse.Namespace, store: Store, out: Out) -> int:
    trust = host_trust()
    authority = authority_of(store, trust)
    now = utcnow()
    certs = sorted(authority.certificates.values(), key=lambda c: (c.actor, c.issued_at))
    rows = [
        (
            c.actor,
            c.key.fingerprint,
            ", ".join(sorted(c.roles)) or "-",
            ", ".join(sorted(c.purposes)),
            c.status(now),
            c.expires_at.strftime("%Y-%m-%d") if c.expires_at else "-",
        )
        for c in certs
    ]
    text = mode_text(trust)
    if trust is None and certs:
        text += "\n(certificates listed as recorded: no trust root on this host checks them)"
    text += "\n" + (
        render.table(rows, ["ACTOR", "FINGERPRINT", "ROLES", "PURPOSES", "STATUS", "EXPIRES"])
        if rows
        else "no certificates"
    )
    if authority.problems and trust is not None:
        text += f"\n{len(authority.problems)} registry documents give no authority:"
        text += "".join(f"\n  {p}" for p in authority.problems)
    out.doc(
        {
            "mode": mode(trust),
            "trust_root": sorted(trust.fingerprints) if trust else [],
            "certificates": [_cert_doc(c, now) for c in certs],
            "problems": authority.problems if trust is not None else [],
        },
        text,
    )
    return EXIT_OK


def certified_actors(store: Store, out: Out, trust: Trust) -> int:
    """``stopline actors list`` in signed mode: the actors the trust root certified."""
    actors = authority_of(store, trust).actors(utcnow())
    rows = [(a.name, ", ".join(sorted(a.roles)) or "-", "certified") for a in actors.values()]
    out.doc(
        {
            "mode": "signed",
            "actors": [
                {"name": a.name, "roles": sorted(a.roles), "active": True} for a in actors.values()
            ],
        },
        "signed mode: actors and roles come from certificates (stopline keys list)\n"
        + (render.table(sorted(rows), ["NAME", "ROLES", "STATUS"]) if rows else "no actors"),
    )
    return EXIT_OK


# --- the parser ------------------------------------------------------------------------------

ACTIONS: dict[str, Callable[[argparse.Namespace, Store, Out], int]] = {
    "certify": certify,
    "revoke": revoke,
    "rotate": rotate,
    "list": list_keys,
}
OFFLINE: dict[str, Callable[[argparse.Namespace, Out], int]] = {
    "create-root": create_root,
    "generate": generate,
}


def cmd_keys(args: argparse.Namespace, store: Store, out: Out) -> int:
    return ACTIONS[args.keys_command](args, store, out)


def run_offline(args: argparse.Namespace, out: Out) -> int:
    """The ``keys`` actions that need no database."""
    return OFFLINE[args.keys_command](args, out)
