"""Refusals that explain themselves: from the item, the command, the reason codes and the
context, one sentence per code with the specifics of this case.

Pure, like the rest of the core: the caller gathers what it needs (the item, its policy and the
actor registry, the proposals the item still holds) and gets sentences and structured details
back. The CLI prints the sentences, the HTTP API adds them to the decision JSON
(``explanation``, ``details``) and the web inbox shows them; the reason codes stay as they are.

:func:`approval_outlook` says who may still approve a proposal, and whether enough of them are
left for it ever to be approved (``show``, the inbox and webhooks flag one that cannot be).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .approval import approver_reasons
from .canonical import parse_time, to_plain
from .commands import ActorCommand, Approve, Command, Reject
from .reasons import Reason
from .records import Actor, Item
from .rights import AUTHORITY, Authority, participant_roles
from .states import State
from .step import OPERATOR, Context
from .transitions import TABLE, By, Cmd

MIN_PREFIX = 12  # the shortest digest prefix a person may type (commands.fields.DIGEST)

# What every reason code means, one line each (docs/cli.md lists them from here).
MEANINGS: Mapping[str, str] = {
    Reason.UNKNOWN_ITEM: "no item has that id or AUTOMATION/KEY",
    Reason.ILLEGAL_TRANSITION: "the command does not apply to the item's current state",
    Reason.STALE_VERSION: "another command changed the item while this one was decided",
    Reason.IDEMPOTENCY_KEY_REUSE: "the idempotency key was used before for a different command",
    Reason.UNKNOWN_AUTOMATION: "the item's automation is not registered in this database",
    Reason.INVALID_INPUT: "a value is empty where it may not be, or has no canonical JSON form",
    Reason.INTEGRITY_FAILED: "the stored record does not match what its history sealed",
    Reason.SIGNATURE_INVALID: "signed mode: the command's signature does not authorise it",
    Reason.NOT_DUE: "the step is not due yet",
    Reason.LEASE_HELD: "another worker holds the item's lease",
    Reason.LEASE_LOST: "the worker's lease is gone; it writes nothing more",
    Reason.LEASE_EXPIRED: "the lease expired before the step ended",
    Reason.RETRY_BUDGET_EXHAUSTED: "the step's retry budget is spent",
    Reason.RESUME_CAP: "more attempts were asked than the policy's resume cap grants",
    Reason.NO_PROPOSAL: "the item holds no proposal",
    Reason.PROPOSAL_DIGEST_MISMATCH: "the digest given is not the current proposal's",
    Reason.EVIDENCE_STALE: "the evidence is older than the approval rule allows",
    Reason.ACTOR_UNKNOWN: "no active actor of that name is in the registry",
    Reason.ACTOR_NOT_AUTHORIZED: "the actor holds none of the roles the command needs",
    Reason.SELF_APPROVAL: "the proposer, an editor or a returner may not approve (separation"
    " of duties)",
    Reason.ALREADY_APPROVED: "the actor approved this digest already",
    Reason.APPROVALS_MISSING: "fewer approvals hold than the rule requires",
    Reason.POLICY_CHANGED: "the approval policy changed since the proposal was made",
    Reason.ALREADY_COMPLETED: "the item is completed; nothing to do",
    Reason.NOT_COMPLETED: "the command needs a completed item",
    Reason.QA_FAILED: "an artifact failed its QA check",
    Reason.MODE_FORBIDS_REVISION: "the automation's delivery policy (or its missing revise hook)"
    " allows no revision",
    Reason.PUBLISHED: "the delivery was published; it is not revised in place",
    Reason.ARTIFACT_NOT_BOUND: "an artifact in scope has no bound remote identity",
    Reason.READBACK_UNVERIFIED: "an artifact in scope was never verified by readback",
    Reason.REVIEW_HEAD_MOVED: "the delivery head moved since the revision or packet was bound",
    Reason.REVISION_ACTIVE: "a revision is already under way",
    Reason.SCOPE_INVALID: "the artifacts named are not the item's, or are empty",
    Reason.CONTENT_UNCHANGED: "a revised artifact's content did not change",
    Reason.QA_UNCHANGED: "a revised artifact's QA evidence did not change",
    Reason.NOT_AN_UPDATE: "the write was not an update of the bound remote object (a bound artifact is"
    " updated, never created again)",
    Reason.READBACK_MISMATCH: "what was read back differs from what was sent",
    Reason.REVIEW_PACKET_STALE: "the review packet does not match the item's current packet",
    Reason.REMOTE_IDENTITY_MISSING: "a bound remote object is gone",
    Reason.PUBLICATION_GUARD: "the delivery was published: a revision may not complete over it",
    Reason.REQUEST_MISMATCH: "a failed revision resumes only with the same request",
    Reason.MODE_FORBIDS_PUBLICATION: "the automation's delivery mode does not publish",
    Reason.REVIEW_NOT_APPROVED: "the review packet has no approving verdict",
    Reason.NOT_FOUND_REMOTE: "the target holds no object with that key",
    Reason.ALREADY_STAGED: "the artifacts were staged already",
    Reason.REMOTE_VERSION_CONFLICT: "the remote object changed since it was bound",
    Reason.TARGET_UNAVAILABLE: "the target could not be reached",
}

# The proposal fields a person compares, in the order they are shown.
DIFF_FIELDS = (
    "action",
    "target",
    "params",
    "rationale",
    "evidence",
    "proposer",
    "edited_by",
    "editors",
    "returned_by",
    "policy_version",
    "required_roles",
    "required_approvals",
    "max_evidence_age",
    "separation_of_duties",
)


# --- who may still approve ----------------------------------------------------------------


@dataclass(frozen=True)
class Outlook:
    """Who may still approve a proposal, and whether enough of them are left."""

    required: int
    given: tuple[str, ...]  # approvers whose approval of this digest still holds
    eligible: tuple[str, ...]  # actors who may approve it and have not yet
    excluded: Mapping[str, str] = field(default_factory=dict)  # role holders who may not, why

    @property
    def missing(self) -> int:
        return max(0, self.required - len(self.given))

    @property
    def satisfiable(self) -> bool:
        return self.missing <= len(self.eligible)

    def to_plain(self) -> dict[str, Any]:
        return {
            "required": self.required,
            "given": list(self.given),
            "eligible": list(self.eligible),
            "excluded": dict(self.excluded),
            "missing": self.missing,
            "satisfiable": self.satisfiable,
        }

    def sentence(self) -> str:
        excluded = "; ".join(f"{name} {why}" for name, why in sorted(self.excluded.items()))
        tail = f" ({excluded})" if excluded else ""
        if self.missing == 0:
            return f"{len(self.given)} of {self.required} approvals hold: enough"
        who = _names(self.eligible) if self.eligible else "nobody"
        head = f"{len(self.given)} of {self.required} approvals hold; {who} may still approve"
        if not self.satisfiable:
            return (
                f"this proposal can never be approved: it needs {self.missing} more"
                f" approval{'s' if self.missing != 1 else ''} and only {len(self.eligible)}"
                f" eligible approver{'s are' if len(self.eligible) != 1 else ' is'} left"
                f" ({who} may approve){tail}; add an approver or edit/reject it"
            )
        return head + tail


def _why_excluded(proposal: Mapping[str, Any], name: str) -> str:
    if name == proposal.get("proposer"):
        return "proposed it"
    if name == proposal.get("edited_by") or name in proposal.get("editors", ()):
        return "edited it"
    if name in proposal.get("returned_by", ()):
        return "sent an earlier proposal back (reject --return)"
    return "may not approve it"


def approval_outlook(proposal: Mapping[str, Any], actors: Mapping[str, Actor]) -> Outlook:
    """Who may still approve ``proposal`` with the registry ``actors``, and who holds a
    required role but may not (separation of duties)."""
    ctx = Context(datetime.min, None, actors)
    roles = frozenset(proposal["required_roles"])
    given: list[str] = []
    for approval in proposal.get("approvals", ()):
        holds = approval.get("digest") == proposal["digest"]
        if holds and not approver_reasons(ctx, proposal, approval["actor"])[0]:
            given.append(str(approval["actor"]))
    eligible: list[str] = []
    excluded: dict[str, str] = {}
    for name, actor in sorted(actors.items()):
        if not actor.active or actor.has_any(roles) is None or name in given:
            continue
        if approver_reasons(ctx, proposal, name)[0]:
            excluded[name] = _why_excluded(proposal, name)
        else:
            eligible.append(name)
    return Outlook(int(proposal["required_approvals"]), tuple(given), tuple(eligible), excluded)


# --- what changed between two proposals -----------------------------------------------------


def _leaves(value: Any, path: str) -> dict[str, Any]:
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for key in sorted(value):
            out.update(_leaves(value[key], f"{path}.{key}"))
        return out
    return {path: to_plain(value)}


def proposal_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Field by field (nested parameters by their path), what differs from ``before`` to
    ``after``: ``[{"field", "before", "after"}]``, in :data:`DIFF_FIELDS` order."""
    out: list[dict[str, Any]] = []
    missing = object()
    for name in DIFF_FIELDS:
        old = _leaves(before.get(name), name) if name == "params" else {name: before.get(name)}
        new = _leaves(after.get(name), name) if name == "params" else {name: after.get(name)}
        for path in sorted(set(old) | set(new)):
            a, b = old.get(path, missing), new.get(path, missing)
            if a != b:
                out.append(
                    {
                        "field": path,
                        "before": None if a is missing else to_plain(a),
                        "after": None if b is missing else to_plain(b),
                    }
                )
    return out


def _short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= width else text[: width - 1] + "…"


def diff_lines(diff: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per changed field: ``params.draft: 'Hello' -> 'Hi'``."""
    return [f"{d['field']}: {_short(d['before'])} -> {_short(d['after'])}" for d in diff]


def matching(digest: str, proposals: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The one proposal whose digest is ``digest`` or starts with it (at least
    :data:`MIN_PREFIX` characters), else ``None``."""
    if len(digest) < MIN_PREFIX:
        return None
    found = [p for p in proposals if str(p.get("digest", "")).startswith(digest)]
    return found[0] if len(found) == 1 else None


# --- the sentences ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Explanation:
    sentences: tuple[str, ...]
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_plain(self) -> dict[str, Any]:
        return {"explanation": list(self.sentences), "details": to_plain(dict(self.details))}


def _names(names: Sequence[str]) -> str:
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


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
        f" {_names(who) or 'nobody'}; {_actor(case)} holds {has}"
    )


def _self_approval(case: Case, item: Item) -> str:
    proposal = item.doc("proposal") or {}
    name = _actor(case)
    return (
        f"{name} {_why_excluded(proposal, name)}, and this rule keeps separation of duties:"
        f" the proposer ({proposal.get('proposer')}), every editor"
        f" ({_names(list(proposal.get('editors', ()))) or 'none'}) and who sent it back may"
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
