"""``note``: a comment added to an item's history. Nothing else changes.

A note is an event like any other (hash-chained, sealed, in the ledger), in every state, final
ones included: it keeps the state, the documents, the retry budget and the lease. Who may note
is anyone holding a role that gives some right on the item (``rights.participant_roles``); a
viewer may not. While a worker holds a live lease the note is refused ``lease_held`` (a write
now would make the worker's commit lose its compare-and-set); it can be added when the step
ends.
"""

from __future__ import annotations

from .canonical import digest
from .commands import Note
from .decision import Decision, refused
from .limits import check
from .reasons import Reason
from .records import Item
from .rights import actor_part
from .step import Context, legal, policy_of, transition
from .transitions import Cmd


def body_reasons(body: str) -> list[str]:
    """A note's body is text with a visible character, within the input limits."""
    if not isinstance(body, str) or not body.strip() or check(body):
        return [Reason.INVALID_INPUT]
    return []


def decide_note(item: Item, command: Note, ctx: Context) -> Decision:
    policy = policy_of(ctx)
    reasons = legal(item, Cmd.NOTE, item.state)
    reasons += actor_part(item, Cmd.NOTE, command.actor, ctx, policy)
    reasons += body_reasons(command.body)
    if item.lease_live(ctx.now):
        reasons.append(Reason.LEASE_HELD)
    if reasons:
        return refused(item, reasons)
    return transition(
        item,
        Cmd.NOTE,
        item.state,
        ctx,
        actor=command.actor,
        keep_lease=True,
        digests={"body": digest(command.body)},
        detail={"body": command.body},
    )
