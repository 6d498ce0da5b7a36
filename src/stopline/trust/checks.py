"""What a host in signed mode checks before it acts, and what the command layer signs.

Before an acting call (and on every fresh claim) a worker checks, for the item it holds:

* the record of the person's command that last let the item out of a stop (or completed) state
  (``release`` in the item's documents) carries a live attestation bound to that command, that
  item and the head it was given on (for ``approve``: the proposal digest);
* in ``approved`` and ``delivering``, every counted approval carries a live attestation of
  ``approve`` by that actor, of that item, bound to the current proposal digest, with the role
  the approval counts under.

Each failure is a finding ``signature_invalid``; the core stops the item (``core/guard.py``).

For an item in a work state (it may act) every key must hold now and never have been revoked.
For any other item the signatures are a record of the past: each key must have held when it
signed, so ``stopline verify`` stays clean after a key is rotated or expires, and still names a
signature that never verified, a key the root never certified, or a record bound elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..core.canonical import digest, format_time
from ..core.commands import ActorCommand, Approve
from ..core.integrity import Finding
from ..core.reasons import Reason
from ..core.records import Event, Item
from ..core.rights import participant_roles
from ..core.states import State
from ..core.step import AGENT, OPERATOR
from .authority import Authority, attestation_problems
from .documents import ATTESTATION, VERSION, Signed, sign
from .keys import Signer

ACTING = (State.APPROVED, State.DELIVERING)
AGENT_ROLES = frozenset({AGENT})


def binds_for(item: Item, command: ActorCommand) -> dict[str, Any]:
    """What a person's signature binds: an approval the proposal digest it approves; any other
    command the item's head when it was given and the command's own fields."""
    if isinstance(command, Approve):
        return {"proposal": command.digest}
    return {"head": item.head, "command": digest(command.to_plain())}


def needed_roles(item: Item | None, command: ActorCommand | str, policy: Any) -> frozenset[str]:
    """The roles a command can count under (what an attestation records as the roles used).
    An agent command (``commands/agent_table.py``, named by its name) counts only under the
    agent role, and no people's command ever counts under it (the core refuses an agent)."""
    if isinstance(command, str):
        return AGENT_ROLES
    proposal = (item.doc("proposal") if item is not None else None) or {}
    required = frozenset(proposal.get("required_roles", ()))
    if isinstance(command, Approve):
        return required
    if command.name == "reject":
        return required | {OPERATOR}
    if command.name == "publish":
        return frozenset(policy.delivery.publish_roles)
    if command.name == "note":
        return participant_roles(item, policy) if item is not None else frozenset()
    return frozenset({OPERATOR})


def attest(
    item: Item,
    command: ActorCommand,
    signer: Signer,
    now: datetime,
    *,
    roles: Sequence[str] = (),
    policy_version: str | None = None,
    via: str | None = None,
) -> Signed:
    body: dict[str, Any] = {
        "kind": ATTESTATION,
        "v": VERSION,
        "command": command.name,
        "item": item.id,
        "actor": command.actor,
        "binds": binds_for(item, command),
        "roles": sorted(roles),
        "at": format_time(now),
        "policy_version": policy_version,
    }
    if via is not None:
        body["via"] = via
    return sign(body, signer)


def signature_findings(
    item: Item, head: Event | None, authority: Authority, now: datetime
) -> list[Finding]:
    found: list[Finding] = []
    live = item.state.is_work  # it may act: every key must hold now

    def add(field: str, problems: list[str]) -> None:
        if problems:
            found.append(
                Finding("item", item.id, field, Reason.SIGNATURE_INVALID.value, "; ".join(problems))
            )

    proposal = item.doc("proposal") or {}
    release = item.doc("release")
    if isinstance(release, Mapping):
        command = str(release.get("command", ""))
        binds = (
            {"proposal": proposal.get("digest")}
            if command == "approve"
            else {"head": release.get("prev_hash")}
        )
        add(
            "release",
            attestation_problems(
                authority,
                release.get("attestation"),
                command=command,
                item=item.id,
                actor=str(release.get("actor", "")),
                binds=binds,
                now=now,
                live=live,
            ),
        )
    elif (
        head is not None
        and head.from_state is not None
        and not head.from_state.is_work
        and head.to_state.is_work
    ):
        add("release", [f"{head.command} let the item out of {head.from_state} unsigned"])
    if item.state in ACTING:
        if "follows" not in proposal:  # made before proposals named their place (2026-12-07)
            add(
                "proposal.follows",
                [
                    "the proposal names no place in the item's history: its signed approvals "
                    "could be another proposal's of the same content"
                ],
            )
        for approval in proposal.get("approvals", ()):
            role = approval.get("role")
            add(
                "proposal.approvals",
                attestation_problems(
                    authority,
                    approval.get("attestation"),
                    command="approve",
                    item=item.id,
                    actor=str(approval.get("actor", "")),
                    binds={"proposal": proposal.get("digest")},
                    now=now,
                    roles=[role] if role else (),
                    live=live,
                ),
            )
    return found
