"""``decide()``: (item, command, context) -> decision. Pure: no clock, no IO, no randomness."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from . import (
    approval,
    delivery,
    failures,
    guard,
    notes,
    operator,
    readback,
    review,
    revision,
    staging,
    work,
)
from .authorship import author_problems
from .canonical import CanonicalError
from .command_types import wrong_types
from .commands import (
    Acknowledge,
    ActorCommand,
    Approve,
    Bind,
    Close,
    Command,
    Delivered,
    Discover,
    Edit,
    Execute,
    Expire,
    Failure,
    Finalize,
    Guard,
    Intent,
    NeedsEyes,
    Note,
    NothingToDo,
    Observe,
    Propose,
    Publish,
    ReadBack,
    Reconcile,
    Reinspect,
    Reject,
    Report,
    Resolve,
    Resume,
    Review,
    Revise,
    Stage,
)
from .decision import Decision, refused, zero_write
from .fast_digest import fast_digest
from .reasons import Reason
from .records import Item
from .step import Context

Handler = Callable[[Item, Any, Context], Decision]

HANDLERS: dict[type[Command], Handler] = {
    Observe: work.decide_observe,
    Propose: work.decide_propose,
    Report: work.decide_report,
    NeedsEyes: work.decide_needs_eyes,
    NothingToDo: work.decide_nothing_to_do,
    Failure: failures.decide_failure,
    Expire: work.decide_expire,
    Execute: approval.decide_execute,
    Guard: guard.decide_guard,
    Approve: approval.decide_approve,
    Reject: approval.decide_reject,
    Edit: approval.decide_edit,
    Reinspect: operator.decide_reinspect,
    Acknowledge: operator.decide_acknowledge,
    Resolve: operator.decide_resolve,
    Resume: operator.decide_resume,
    Close: operator.decide_close,
    Finalize: operator.decide_finalize,
    Stage: staging.decide_stage,
    Intent: delivery.decide_intent,
    Bind: delivery.decide_bind,
    Delivered: delivery.decide_delivered,
    ReadBack: readback.decide_readback,
    Review: review.decide_review,
    Publish: review.decide_publish,
    Reconcile: review.decide_reconcile,
    Revise: revision.decide_revise,
    Note: notes.decide_note,
}


# The fields through which input from outside (hooks, people) reaches a record: each must have
# a canonical form, or the command is refused ``invalid_input`` before anything else.
OUTSIDE_INPUT: dict[type[Command], tuple[str, ...]] = {
    Discover: ("item_id", "automation", "key", "input", "agent"),
    Observe: ("evidence", "observed_at", "classification"),
    Propose: ("action", "target", "params", "rationale", "proposer"),
    Report: ("report",),
    NeedsEyes: ("owner", "why", "evidence"),
    NothingToDo: ("reason",),
    Failure: ("failure_class", "message", "traceback"),
    Stage: ("artifacts", "qa", "result"),
    Intent: ("key", "operation", "idempotency_key"),
    Bind: ("key", "operation", "remote_id", "remote_version"),
    Delivered: ("result",),
    ReadBack: ("readbacks",),
    Edit: ("params",),
    Resolve: ("input", "reason"),
    Reject: ("reason",),
    Reinspect: ("reason",),
    Close: ("reason",),
    Acknowledge: ("reason",),
    Resume: ("reason",),
    Revise: ("reason", "artifacts"),
    Review: ("reason",),
    Publish: ("signal",),
    Reconcile: ("key", "found", "remote_id"),
    Note: ("body",),
}


def decide(item: Item | None, command: Command, ctx: Context) -> Decision:
    """Turn an item record, a command and its context into a decision.

    ``item`` is ``None`` only for :class:`Discover` (or when the named item does not exist,
    which is refused ``unknown_item``). The decision says what to write; it writes nothing.
    """
    if wrong_types(command):  # built by a caller that skipped the command table's checks
        fallback_id = command.item_id if isinstance(command, Discover) else None
        return refused(item, [Reason.INVALID_INPUT], fallback_id)
    try:
        fields = OUTSIDE_INPUT.get(type(command))
        if fields:
            fast_digest({name: getattr(command, name) for name in fields})  # raises: no form
    except (CanonicalError, TypeError, ValueError):
        fallback_id = command.item_id if isinstance(command, Discover) else None
        return refused(item, [Reason.INVALID_INPUT], fallback_id)
    if isinstance(command, Discover):
        if item is not None:
            # Re-discovery of an existing key is a no-op, never a reset.
            return zero_write(item, [])
        return work.decide_discover(command, ctx)
    if item is None:
        return refused(None, [Reason.UNKNOWN_ITEM])
    handler = HANDLERS.get(type(command))
    if handler is None:
        return refused(item, [Reason.ILLEGAL_TRANSITION])
    if isinstance(command, ActorCommand):
        author = command.author_of()
        if author_problems(author.declared()):
            return refused(item, [Reason.INVALID_INPUT])
        # the author is recorded, never consulted: no rule below reads ctx.author
        ctx = replace(ctx, attestation=command.attestation, author=author)
    return handler(item, command, ctx)
