"""Values a command's fields take from the item they act on.

A form sends them back (the digest a person approves is the one on the page) and a hint fills
them in; the core checks them again when the command arrives.
"""

from __future__ import annotations

from typing import Any

from ..core.records import Item
from ..core.states import State


def proposal_digest(item: Item) -> str | None:
    proposal = item.doc("proposal")
    return None if proposal is None else str(proposal["digest"])


def proposal_params(item: Item) -> Any:
    proposal = item.doc("proposal")
    return None if proposal is None else proposal["params"]


def packet_digest(item: Item) -> str | None:
    """The digest of the item's review packet, unless a revision voided it."""
    packet = item.doc("review_packet")
    return None if packet is None or packet.get("void") else str(packet["digest"])


def artifact_keys(item: Item) -> list[str]:
    return [str(a["key"]) for a in item.doc("artifacts") or ()]


def _failed_revision(item: Item) -> Any:
    revision = item.doc("revision")
    return revision if item.state is State.REVISION_FAILED and revision else None


def revision_reason(item: Item) -> str | None:
    """The reason of a failed revision: taking it up again needs the same request."""
    revision = _failed_revision(item)
    return None if revision is None else str(revision.get("reason", ""))


def revision_scope(item: Item) -> list[str]:
    """The scope of a failed revision (the same request), else every artifact."""
    revision = _failed_revision(item)
    return [str(k) for k in revision.get("scope", ())] if revision else artifact_keys(item)
