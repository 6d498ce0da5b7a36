"""Checkpoints: the head of every chain at one moment, and what a later store must still hold.

A checkpoint records, for every item, the sequence number and hash of its last event; and the
length and last hash of the store ledger and of the registry chain. Chains only grow, so a store
taken later must still hold every recorded position with the recorded hash. :func:`compare`
lists every place where it does not: an item that is gone, a history that is shorter than it
was or whose event at the recorded position has another hash, a ledger or registry chain that is
shorter or differs at the recorded position. That is how a rollback to an older copy of the
database, a deleted item or a history rewritten consistently (every hash recomputed) shows up,
which no check of the chains alone can see.

Pure: the caller reads the chains (``stopline.trust.checkpoints``) and signs the document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .integrity import Finding

KIND = "stopline.checkpoint"
VERSION = 1

ITEM_MISSING = "checkpoint_item_missing"
ROLLBACK = "checkpoint_rollback"
REWRITE = "checkpoint_rewrite"
MALFORMED = "checkpoint_malformed"

Histories = Mapping[str, Mapping[int, str]]  # item id -> event seq -> event hash


def heads(histories: Histories, ledger: Sequence[str], registry: Sequence[str]) -> dict[str, Any]:
    """The chain heads of a checkpoint body (``ledger`` and ``registry``: every hash of that
    chain, oldest first)."""
    items = {}
    for item_id, events in histories.items():
        if events:
            seq = max(events)
            items[item_id] = {"seq": seq, "hash": events[seq]}
    return {
        "items": items,
        "ledger": _chain_head(ledger),
        "registry": _chain_head(registry),
    }


def _chain_head(hashes: Sequence[str]) -> dict[str, Any]:
    return {"n": len(hashes), "hash": hashes[-1] if hashes else ""}


def compare(
    recorded: Mapping[str, Any],
    histories: Histories,
    ledger: Sequence[str],
    registry: Sequence[str],
) -> list[Finding]:
    """Every place where the store (``histories``, ``ledger``, ``registry``) no longer holds
    what the checkpoint body ``recorded`` saw; empty when each chain still starts as it did."""
    problems = shape_problems(recorded)
    if problems:
        return [Finding("checkpoint", "body", "shape", MALFORMED, p) for p in problems]
    found: list[Finding] = []
    for item_id, head in sorted(recorded["items"].items()):
        seq, expected = int(head["seq"]), str(head["hash"])
        events = histories.get(item_id)
        if events is None:
            found.append(
                Finding(
                    "item",
                    item_id,
                    "row",
                    ITEM_MISSING,
                    f"the checkpoint saw it at event {seq}; it is no longer in the store",
                )
            )
            continue
        last = max(events, default=0)
        if seq not in events:
            found.append(
                Finding(
                    "item",
                    item_id,
                    "seq",
                    ROLLBACK,
                    f"the checkpoint saw event {seq}; the history now ends at event {last}",
                )
            )
        elif events[seq] != expected:
            found.append(
                Finding(
                    "item",
                    item_id,
                    "hash",
                    REWRITE,
                    f"event {seq} now has another hash than the checkpoint saw",
                )
            )
    found += _chain("ledger", recorded["ledger"], ledger)
    found += _chain("registry", recorded["registry"], registry)
    return found


def _chain(kind: str, head: Mapping[str, Any], hashes: Sequence[str]) -> list[Finding]:
    n, expected = int(head["n"]), str(head["hash"])
    if n == 0:
        return []
    if len(hashes) < n:
        return [
            Finding(
                kind,
                str(n),
                "n",
                ROLLBACK,
                f"the checkpoint saw {n} entries; the {kind} now has {len(hashes)}",
            )
        ]
    if hashes[n - 1] != expected:
        return [
            Finding(
                kind,
                str(n),
                "hash",
                REWRITE,
                f"entry {n} now has another hash than the checkpoint saw",
            )
        ]
    return []


def shape_problems(body: Any) -> list[str]:
    """Why ``body`` is not a checkpoint body; empty when it is one."""
    if not isinstance(body, Mapping):
        return ["a checkpoint body is an object"]
    problems = []
    if body.get("kind") != KIND:
        problems.append(f"kind is {body.get('kind')!r}, not {KIND!r}")
    if body.get("v") != VERSION:
        problems.append(f"version {body.get('v')!r} is not {VERSION}")
    items = body.get("items")
    if not isinstance(items, Mapping):
        problems.append("items is not an object")
    else:
        for item_id, head in items.items():
            if not (_count(head, "seq", 1) and _hash(head)):
                problems.append(f"the head of item {item_id} is not {{seq, hash}}")
                break
    for chain in ("ledger", "registry"):
        head = body.get(chain)
        if not (_count(head, "n", 0) and _hash(head)):
            problems.append(f"{chain} is not {{n, hash}}")
    return problems


def _count(head: Any, name: str, least: int) -> bool:
    if not isinstance(head, Mapping):
        return False
    value = head.get(name)
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _hash(head: Any) -> bool:
    return isinstance(head, Mapping) and isinstance(head.get("hash"), str)
