"""Refusals that explain themselves: from the item, the command, the reason codes and the
context, one sentence per code with the specifics of this case.

Pure, like the rest of the core: the caller gathers what it needs (the item, its policy and the
actor registry, the proposals the item still holds) and gets sentences and structured details
back. The CLI prints the sentences, the HTTP API adds them to the decision JSON
(``explanation``, ``details``) and the web inbox shows them; the reason codes stay as they are.

What each code means in general is :mod:`.reason_meanings`; who may still approve is
:mod:`.approval_outlook`; what changed between two proposals is :mod:`.proposal_diff`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from .approval_outlook import approval_outlook, listed, why_excluded
from .canonical import parse_time, to_plain
from .commands import ActorCommand, Approve, Command, Reconcile, Reject
from .proposal_diff import matching, proposal_diff
from .reason_meanings import MEANINGS
from .reasons import Reason
from .records import Actor, Item
from .rights import AUTHORITY, Authority, participant_roles
from .states import State
from .step import OPERATOR, Context
from .transitions import TABLE, By, Cmd

# --- the sentences ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Explanation:
    sentences: tuple[str, ...]
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_plain(self) -> dict[str, Any]:
        return {"explanation": list(self.sentences), "details": to_plain(dict(self.details))}


def _age(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{max(seconds, 0)} s"


def roles_needed(item: Item, cmd: Cmd, ctx: Context) -> frozenset[str]:
    """The roles that give ``cmd`` on ``item`` (empty when no actor is needed)."""
    authority = AUTHORITY.get(cmd, Authority.OPERATOR)
    proposal = item.doc("proposal")
    required = frozenset(proposal["required_roles"]) if proposal is not None else frozenset()
    if authority is Authority.APPROVER:
        return required
    if authority is Authority.APPROVER_OR_OPERATOR:
        return required | {OPERATOR}
    if authority is Authority.PUBLISHER:
        return frozenset(ctx.policy.delivery.publish_roles) if ctx.policy else frozenset()
    if authority is Authority.ANYONE:
        return frozenset()
    if authority is Authority.PARTICIPANT:
        return participant_roles(item, ctx.policy) if ctx.policy else frozenset({OPERATOR})
    return frozenset({OPERATOR})


def holders(roles: frozenset[str], actors: Mapping[str, Actor]) -> list[str]:
    return sorted(n for n, a in actors.items() if a.active and a.has_any(roles) is not None)


def people_commands(state: State) -> list[str]:
    """The people's commands the transition table allows from ``state``."""
    people = (By.OPERATOR, By.APPROVER, By.REVIEWER)
    return sorted({c.value for (s, c), row in TABLE.items() if s is state and row.by in people})


@dataclass(frozen=True)
class Case:
    """What a refusal is about, gathered by the caller."""

    item: Item | None
    command: Command
    reasons: Sequence[str]
    ctx: Context
    ref: str = ""  # the item as the person named it
    proposals: Sequence[Mapping[str, Any]] = ()  # proposals the item holds, newest first


def _actor(case: Case) -> str:
    return case.command.actor if isinstance(case.command, ActorCommand) else ""


def _cmd(case: Case) -> Cmd | None:
    try:
        return Cmd(case.command.name)
    except ValueError:
        return None


def _illegal(case: Case, item: Item) -> str:
    cmd = case.command.name
    if item.state.is_terminal and not people_commands(item.state):
        return f"{cmd} does not apply: the item is {item.state.value}, which is final"
    allowed = people_commands(item.state)
    choice = f"from {item.state.value} a person may {', '.join(allowed)}" if allowed else ""
    cmd_row = _cmd(case)
    where = [s.value for s in State if (s, cmd_row) in TABLE] or ["no state"]
    return f"{cmd} applies in {', '.join(where)}; this item is {item.state.value}" + (
        f" ({choice})" if choice else ""
    )


def _not_authorized(case: Case, item: Item) -> str:
    cmd = _cmd(case)
    actor = case.ctx.actors.get(_actor(case))
    needed = roles_needed(item, cmd, case.ctx) if cmd is not None else frozenset()
    who = holders(needed, case.ctx.actors)
    has = ", ".join(sorted(actor.roles)) if actor is not None and actor.roles else "no role"
    what = case.command.name
    proposal = item.doc("proposal")
    if isinstance(case.command, Approve) and proposal is not None:
        what = f"approving {proposal['action']}"
    return (
        f"{what} needs one of the roles {', '.join(sorted(needed)) or '(none)'}, held by"
        f" {listed(who) or 'nobody'}; {_actor(case)} holds {has}"
    )


def _self_approval(case: Case, item: Item) -> str:
    proposal = item.doc("proposal") or {}
    name = _actor(case)
    return (
        f"{name} {why_excluded(proposal, name)}, and this rule keeps separation of duties:"
        f" the proposer ({proposal.get('proposer')}), every editor"
        f" ({listed(list(proposal.get('editors', ()))) or 'none'}) and who sent it back may"
        " not approve"
    )


def _stale_evidence(case: Case, item: Item) -> str:
    proposal = item.doc("proposal") or {}
    evidence = list(proposal.get("evidence", ()))
    observed = evidence[0].get("observed_at") if evidence else None
    limit = timedelta(seconds=float(proposal.get("max_evidence_age", 0)))
    if observed is None:
        return "the proposal rests on no evidence with a time; gather it with reinspect"
    age = case.ctx.now - parse_time(observed)
    return (
        f"the evidence was observed at {observed} ({_age(age)} ago) and this action's rule"
        f" accepts at most {_age(limit)}: `stopline reinspect {item.id} --actor ACTOR"
        ' --reason "..."` gathers fresh evidence and a new proposal'
    )


def _digest_mismatch(case: Case, item: Item, details: dict[str, Any]) -> str:
    current = item.doc("proposal")
    given = str(getattr(case.command, "digest", "") or "")
    if current is None:
        return "the item holds no proposal any more"
    earlier = matching(given, case.proposals)
    details["current_digest"] = current["digest"]
    if earlier is None or earlier.get("digest") == current["digest"]:
        return (
            f"the digest you gave ({given[:16]}…) is not the current proposal's"
            f" ({current['digest'][:16]}…), and stopline no longer holds the proposal it"
            f" names, so it cannot show what changed: read the whole current proposal with"
            f" `stopline show {item.id}` before deciding again"
        )
    diff = proposal_diff(earlier, current)
    details["diff"] = diff
    details["approved_digest"] = earlier["digest"]
    changed = ", ".join(d["field"] for d in diff) or "nothing a person sees"
    by = current.get("edited_by")
    return (
        f"the proposal changed after you read it ({earlier['digest'][:16]}… ->"
        f" {current['digest'][:16]}…{f', edited by {by}' if by else ''}); changed: {changed}"
    )


def _unknown_actor(case: Case) -> str:
    name = _actor(case)
    known = case.ctx.actors.get(name)
    if known is not None and not known.active:
        return f"the actor {name} was revoked"
    return f"no actor named {name} is in the registry (`stopline actors list` shows who is)"


def _policy_changed(case: Case, item: Item) -> str:
    proposal = item.doc("proposal") or {}
    now = case.ctx.policy.approval.version if case.ctx.policy else "?"
    return (
        f"the approval policy changed since this proposal was made (version"
        f" {str(proposal.get('policy_version'))[:12]}… -> {str(now)[:12]}…): `stopline"
        f" reinspect {item.id}` makes a new proposal under the current rules"
    )


def _already_approved(case: Case, item: Item) -> str:
    proposal = item.doc("proposal") or {}
    at = next(
        (a.get("at") for a in proposal.get("approvals", ()) if a.get("actor") == _actor(case)),
        None,
    )
    return f"{_actor(case)} approved this digest already" + (f" at {at}" if at else "")


def _reconcile_found(command: Reconcile, reason: str, details: dict[str, Any]) -> str:
    """What a reconcile's lookup found under the key, for the two codes that are about it."""
    found = command.found
    if reason == Reason.REMOTE_IDENTITY_MISSING:
        return (
            f"the target holds no object under the idempotency key of {command.key}, so there"
            " is nothing to bind (reconcile never creates)"
        )
    fields = list(found.diff) if found is not None else []
    details["fields"] = fields
    differs = (
        f"differs in {', '.join(fields)}"
        if fields
        else "differs in no field compared, but its readback digest does"
    )
    return (
        f"the object found for {command.key} ({command.remote_id}) holds content stopline did"
        f" not send: it {differs}; it was not bound"
    )


def sentence(case: Case, reason: str, details: dict[str, Any]) -> str:
    """One sentence for ``reason`` with the specifics of ``case``."""
    item = case.item
    if reason == Reason.UNKNOWN_ITEM or item is None:
        return (
            f"there is no item {case.ref or (item.id if item else '')} (name one by its id or"
            " as AUTOMATION/KEY, as `stopline items` lists them)"
        )
    if reason == Reason.ILLEGAL_TRANSITION:
        return _illegal(case, item)
    if reason == Reason.ACTOR_NOT_AUTHORIZED:
        return _not_authorized(case, item)
    if reason == Reason.ACTOR_UNKNOWN:
        return _unknown_actor(case)
    if reason == Reason.SELF_APPROVAL:
        return _self_approval(case, item)
    if reason == Reason.EVIDENCE_STALE:
        return _stale_evidence(case, item)
    if reason == Reason.PROPOSAL_DIGEST_MISMATCH:
        return _digest_mismatch(case, item, details)
    if reason == Reason.POLICY_CHANGED:
        return _policy_changed(case, item)
    if reason == Reason.ALREADY_APPROVED:
        return _already_approved(case, item)
    about_lookup = (Reason.READBACK_MISMATCH, Reason.REMOTE_IDENTITY_MISSING)
    if reason in about_lookup and isinstance(case.command, Reconcile):
        return _reconcile_found(case.command, reason, details)
    if reason == Reason.NO_PROPOSAL:
        return f"the item holds no proposal (it is {item.state.value})"
    if reason == Reason.NOT_COMPLETED:
        return f"{MEANINGS[reason]} (the item is {item.state.value})"
    meaning = MEANINGS.get(reason)
    return meaning if meaning is not None else f"refused {reason}"


def explain(case: Case) -> Explanation:
    """The sentences (one per reason code, in order) and structured details of a refusal or a
    zero-write decision."""
    details: dict[str, Any] = {}
    sentences = [f"{r}: {sentence(case, r, details)}" for r in case.reasons]
    item = case.item
    proposal = item.doc("proposal") if item is not None else None
    about_approval = isinstance(case.command, Approve | Reject)
    if proposal is not None and about_approval and item is not None:
        outlook = approval_outlook(proposal, case.ctx.actors)
        details["approvals"] = outlook.to_plain()
        if not outlook.satisfiable or Reason.SELF_APPROVAL in case.reasons:
            sentences.append(outlook.sentence())
    return Explanation(tuple(sentences), details)
