"""Taking a checkpoint of a store, and holding a store against one.

A checkpoint file is the JSON of a signed document (``{"body", "key", "signature"}``, see
:mod:`stopline.trust.documents`) whose body is a ``stopline.checkpoint``
(:mod:`stopline.core.checkpoint`). A host in unsigned mode may write one without a key (only
``{"body"}``): it still detects a rollback, but anyone who can write the file can forge it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..core import checkpoint
from ..core.canonical import format_time
from ..core.frozen import thaw
from ..core.integrity import Finding
from ..store import Store
from .authority import Authority, Trust, checkpoint_signer_problems
from .documents import CHECKPOINT, MalformedDocument, Signed, sign
from .keys import Signer

assert CHECKPOINT == checkpoint.KIND

SIGNATURE = "signature_invalid"


@dataclass(frozen=True)
class Chains:
    """Every hash of every chain of a store, as read now."""

    histories: dict[str, dict[int, str]]
    ledger: list[str]
    registry: list[str]


def read_chains(store: Store) -> Chains:
    histories = {
        item.id: {e.seq: e.hash for e in events} for item, events in store.iter_items_with_events()
    }
    ledger = [e.hash for e in store.ledger()]
    registry = [str(e["hash"]) for e in store.actor_events()]
    return Chains(histories, ledger, registry)


def body(store: Store, now: datetime) -> dict[str, Any]:
    """The checkpoint body of ``store`` now."""
    chains = read_chains(store)
    return {
        "kind": checkpoint.KIND,
        "v": checkpoint.VERSION,
        "at": format_time(now),
        **checkpoint.heads(chains.histories, chains.ledger, chains.registry),
    }


def take(store: Store, now: datetime, signer: Signer | None) -> dict[str, Any]:
    """The checkpoint document of ``store`` now: signed by ``signer``, or only its body."""
    made = body(store, now)
    return sign(made, signer).to_plain() if signer is not None else {"body": made}


class CheckpointError(ValueError):
    """A file that is not a checkpoint document."""


def parse(text: str) -> Mapping[str, Any]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise CheckpointError(f"not JSON: {exc}") from exc
    if not isinstance(doc, Mapping) or not isinstance(doc.get("body"), Mapping):
        raise CheckpointError('a checkpoint is a JSON object with a "body"')
    return doc


@dataclass
class Held:
    """What holding a store against a checkpoint found."""

    at: str = ""
    signed_by: str | None = None  # the fingerprint of the key that signed it
    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def hold(store: Store, doc: Mapping[str, Any], trust: Trust | None) -> Held:
    """Check ``doc``'s signature (against ``trust`` in signed mode) and compare ``store`` with
    the heads it recorded."""
    held = Held(at=str(doc["body"].get("at", "")))
    signed = None
    if "signature" in doc or "key" in doc:
        try:
            signed = Signed.from_plain(doc)
        except MalformedDocument as exc:
            held.findings.append(Finding("checkpoint", held.at, "signature", SIGNATURE, str(exc)))
    if signed is not None:
        held.signed_by = _fingerprint(signed)
        if trust is not None:
            authority = Authority.build(trust, store.registry().signed)
            problems = checkpoint_signer_problems(authority, signed)
        else:
            problems = [] if signed.valid() else ["the signature does not verify"]
            held.warnings.append(
                "unsigned mode: the checkpoint's key is not checked against a trust root "
                "(set STOPLINE_TRUST_ROOT); only its signature over its body and the hashes are"
            )
        held.findings += [
            Finding("checkpoint", held.at, "signature", SIGNATURE, p) for p in problems
        ]
    elif trust is not None:
        held.findings.append(
            Finding(
                "checkpoint",
                held.at,
                "signature",
                SIGNATURE,
                "signed mode: the checkpoint is unsigned (take it with stopline checkpoint --key)",
            )
        )
    else:
        held.warnings.append(
            "the checkpoint is unsigned: only the hashes are compared, and anyone who could "
            "write the file could have forged it"
        )
    chains = read_chains(store)
    held.findings += checkpoint.compare(
        thaw(doc["body"]), chains.histories, chains.ledger, chains.registry
    )
    return held


def _fingerprint(signed: Signed) -> str | None:
    try:
        return signed.public_key.fingerprint
    except ValueError:
        return None
