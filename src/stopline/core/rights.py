"""Who may run which people's command on an item now, and if not, why.

:func:`rights` answers for every command a person can give: it runs the same rule functions
``decide()`` runs (:func:`~stopline.core.step.legal`, :func:`~stopline.core.step.actor_reasons`,
:func:`~stopline.core.approval.approver_reasons`, ...) on the part of the decision that does not
depend on what the person types: the item's state, the actor and their roles, and what the
automation's policy offers. The reason codes are the ones ``decide()`` gives for that part
(:data:`ACCESS_REASONS`); a test holds the two to each other.

A command ``rights`` allows may still be refused by ``decide()`` for what is typed (a stale
digest, an empty reason, a scope that does not match). Nothing is ever decided here: the
shells use the answer to offer forms and hints, and every command is decided again.

Who issues a command is declared once, in the ``by`` column of the transition table;
:data:`AUTHORITY` refines the approver rows into the roles they mean.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from .approval import approver_gate, approver_reasons
from .operator import resume_target
from .policy import PUBLISH, Policy
from .reasons import Reason
from .records import Item
from .states import DELIVERED_STATES, State
from .step import AGENT, OPERATOR, Context, actor_reasons, legal, legal_any
from .transitions import TABLE, By, Cmd


class Authority(StrEnum):
    """Which roles give the right to run a command."""

    OPERATOR = "operator"  # the operator role
    APPROVER = "approver"  # a role the current proposal's approval rule requires
    APPROVER_OR_OPERATOR = "approver_or_operator"  # either of the two
    PUBLISHER = "publisher"  # a publish role of the automation's delivery policy
    ANYONE = "anyone"  # no actor at all: the command never writes (finalize)
    # any role that gives one of the rights above on the item (a note: it moves nothing)
    PARTICIPANT = "participant"


# The approver rows of the transition table mean different roles; every other people's row
# means the operator role. A people's command missing here with approver rows fails import.
_APPROVER_ROWS = {
    Cmd.APPROVE: Authority.APPROVER,
    Cmd.REJECT: Authority.APPROVER_OR_OPERATOR,
    Cmd.PUBLISH: Authority.PUBLISHER,
}
_PEOPLE = {
    By.OPERATOR: Authority.OPERATOR,
    By.REVIEWER: Authority.OPERATOR,
    By.PARTICIPANT: Authority.PARTICIPANT,
}


def _authorities() -> dict[Cmd, Authority]:
    found: dict[Cmd, Authority] = {Cmd.FINALIZE: Authority.ANYONE}  # no rows: it moves nothing
    for (_, cmd), row in TABLE.items():
        if row.by is By.APPROVER:
            if cmd not in _APPROVER_ROWS:
                raise ValueError(f"say which approver roles may issue {cmd}")
            authority = _APPROVER_ROWS[cmd]
        elif row.by in _PEOPLE:
            authority = _PEOPLE[row.by]
        else:
            continue
        if found.setdefault(cmd, authority) is not authority:
            raise ValueError(f"{cmd} has rows issued by different people")
    return found


AUTHORITY: Mapping[Cmd, Authority] = _authorities()
COMMANDS: tuple[Cmd, ...] = tuple(AUTHORITY)

# The reason codes of the state, actor and policy part of a decision.
ACCESS_REASONS = frozenset(
    {
        Reason.ILLEGAL_TRANSITION,
        Reason.NOT_COMPLETED,
        Reason.NO_PROPOSAL,
        Reason.ACTOR_UNKNOWN,
        Reason.ACTOR_NOT_AUTHORIZED,
        Reason.SELF_APPROVAL,
        Reason.AGENT_FORBIDDEN,
        Reason.MODE_FORBIDS_PUBLICATION,
        Reason.MODE_FORBIDS_REVISION,
    }
)


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reasons: tuple[str, ...] = ()


# --- the state part: the transition table, and the record the command acts on -------------


def _needs_proposal(cmd: Cmd) -> Callable[[Item], list[str]]:
    def check(item: Item) -> list[str]:
        missing = [] if item.doc("proposal") is not None else [Reason.NO_PROPOSAL]
        return legal_any(item, cmd) + missing

    return check


def _resume_state(item: Item) -> list[str]:
    return legal(item, Cmd.RESUME, resume_target(item))


def _revise_state(item: Item) -> list[str]:
    reasons = legal_any(item, Cmd.REVISE)
    if item.state is not State.REVISION_FAILED and item.state not in DELIVERED_STATES:
        reasons.append(Reason.NOT_COMPLETED)
    return reasons


def _finalize_state(item: Item) -> list[str]:
    return [] if item.state in DELIVERED_STATES else [Reason.NOT_COMPLETED]


_STATE: Mapping[Cmd, Callable[[Item], list[str]]] = {
    Cmd.APPROVE: _needs_proposal(Cmd.APPROVE),
    Cmd.REJECT: _needs_proposal(Cmd.REJECT),
    Cmd.EDIT: _needs_proposal(Cmd.EDIT),
    Cmd.RESUME: _resume_state,
    Cmd.REVISE: _revise_state,
    Cmd.FINALIZE: _finalize_state,
}


def state_reasons(item: Item, cmd: Cmd) -> list[str]:
    """Why the item's state alone rules ``cmd`` out (empty: the state allows it)."""
    check = _STATE.get(cmd)
    return check(item) if check is not None else legal_any(item, cmd)


# --- the actor part -------------------------------------------------------------------------


def _proposal_roles(item: Item) -> frozenset[str]:
    proposal = item.doc("proposal")
    return frozenset(proposal["required_roles"]) if proposal is not None else frozenset()


def participant_roles(item: Item, policy: Policy) -> frozenset[str]:
    """The roles that give some right on ``item``: operator, a role of the policy's approval
    rules or of the current proposal, a publish role when the policy publishes."""
    found = authority_roles(Authority.PARTICIPANT, policy)
    return found | (_proposal_roles(item) if item.doc("proposal") is not None else frozenset())


def own_agent_item(item: Item, actor: str, ctx: Context) -> bool:
    """An active agent on an item it started itself: the one people's command it may give is a
    note (its own account of the work); every other one is refused ``agent_forbidden``."""
    found = ctx.actor(actor)
    return found is not None and AGENT in found.roles and item.doc("agent") == actor


def actor_part(item: Item, cmd: Cmd, actor: str, ctx: Context, policy: Policy) -> list[str]:
    """Why ``actor`` may not run ``cmd`` on ``item``: unknown, revoked, or no role for it."""
    authority = AUTHORITY[cmd]
    if authority is Authority.ANYONE:
        return []
    if authority is Authority.PARTICIPANT:
        if own_agent_item(item, actor, ctx):
            return []
        return actor_reasons(ctx, actor, participant_roles(item, policy))
    if authority is Authority.APPROVER:
        proposal = item.doc("proposal")
        if proposal is None:
            return approver_gate(ctx, actor)
        return approver_reasons(ctx, proposal, actor)[0]
    if authority is Authority.APPROVER_OR_OPERATOR:
        return actor_reasons(ctx, actor, _proposal_roles(item) | {OPERATOR})
    if authority is Authority.PUBLISHER:
        return actor_reasons(ctx, actor, frozenset(policy.delivery.publish_roles))
    return actor_reasons(ctx, actor, (OPERATOR,))


# --- the policy part: what the automation offers ---------------------------------------------


def offered_reasons(item: Item, cmd: Cmd, policy: Policy) -> list[str]:
    if cmd is Cmd.PUBLISH and policy.delivery.mode != PUBLISH:
        return [Reason.MODE_FORBIDS_PUBLICATION]
    if cmd is Cmd.REVISE:  # a new request and a resume alike (core/revision.mode_reasons)
        offered = policy.delivery.revisable and policy.revise_hook
        return [] if offered else [Reason.MODE_FORBIDS_REVISION]
    return []


# --- the answer -----------------------------------------------------------------------------


def verdict(item: Item, cmd: Cmd, actor: str, ctx: Context) -> Verdict:
    """The state, actor and policy part of deciding ``cmd`` by ``actor`` on ``item``."""
    if ctx.policy is None:  # the controller refuses every command of an unknown automation
        return Verdict(False, (Reason.UNKNOWN_AUTOMATION,))
    reasons = state_reasons(item, cmd) + actor_part(item, cmd, actor, ctx, ctx.policy)
    reasons += offered_reasons(item, cmd, ctx.policy)
    unique = tuple(dict.fromkeys(reasons))
    return Verdict(not unique, unique)


def rights(item: Item, actor_name: str, ctx: Context) -> dict[str, Verdict]:
    """For every people's command, whether ``actor_name`` may run it on ``item`` now."""
    return {cmd.value: verdict(item, cmd, actor_name, ctx) for cmd in COMMANDS}


def authority_roles(authority: Authority, policy: Policy | None) -> frozenset[str]:
    """Every role that can hold ``authority`` on some item of an automation with ``policy``
    (``None``: roles that hold it whatever the policy)."""
    if authority is Authority.OPERATOR:
        return frozenset({OPERATOR})
    if authority is Authority.PARTICIPANT:
        others = (Authority.OPERATOR, Authority.APPROVER, Authority.PUBLISHER)
        return frozenset(role for a in others for role in authority_roles(a, policy))
    if policy is None or authority is Authority.ANYONE:
        return frozenset()
    if authority is Authority.PUBLISHER:
        mode = policy.delivery.mode == PUBLISH
        return frozenset(policy.delivery.publish_roles) if mode else frozenset()
    rules = (*policy.approval.rules.values(), policy.approval.default)
    approvers = frozenset(role for rule in rules if rule.approvals > 0 for role in rule.roles)
    if authority is Authority.APPROVER_OR_OPERATOR:
        return approvers | {OPERATOR}
    return approvers


def roles_with_rights(
    authorities: Iterable[Authority], policies: Iterable[Policy]
) -> frozenset[str]:
    """Every role that gives a right to one of ``authorities`` under one of ``policies``."""
    found: set[str] = set()
    for policy in (None, *policies):
        for authority in authorities:
            found |= authority_roles(authority, policy)
    return frozenset(found)
