"""Who may still approve a proposal, and whether enough of them are left for it ever to be
approved (``show``, the inbox and webhooks flag one that cannot be)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .approval import approver_reasons
from .records import Actor
from .step import Context


def listed(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


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
        who = listed(self.eligible) if self.eligible else "nobody"
        head = f"{len(self.given)} of {self.required} approvals hold; {who} may still approve"
        if not self.satisfiable:
            return (
                f"this proposal can never be approved: it needs {self.missing} more"
                f" approval{'s' if self.missing != 1 else ''} and only {len(self.eligible)}"
                f" eligible approver{'s are' if len(self.eligible) != 1 else ' is'} left"
                f" ({who} may approve){tail}; add an approver or edit/reject it"
            )
        return head + tail


def why_excluded(proposal: Mapping[str, Any], name: str) -> str:
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
            excluded[name] = why_excluded(proposal, name)
        else:
            eligible.append(name)
    return Outlook(int(proposal["required_approvals"]), tuple(given), tuple(eligible), excluded)
