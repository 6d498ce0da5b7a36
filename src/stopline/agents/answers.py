"""What the agent commands answer: a value with the agent's view of its item, or a refusal
with reason codes (``agents/desk.py`` makes them, the MCP server and the guard read them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.canonical import CanonicalError, digest, format_time, to_plain
from ..core.reason_meanings import MEANINGS
from ..core.records import SHAPE_ERRORS, Item
from ..core.states import State


class AgentError(Exception):
    """The identity is not an active actor holding the agent role."""


@dataclass(frozen=True)
class Answer:
    """What an agent command answers: ``ok`` with ``data``, or refused with reason codes."""

    ok: bool
    data: Mapping[str, Any] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()
    explanation: tuple[str, ...] = ()

    def to_plain(self) -> dict[str, Any]:
        if self.ok:
            return dict(self.data)
        return {
            "refused": [str(r) for r in self.reasons],
            "explanation": list(self.explanation) or [MEANINGS.get(r, r) for r in self.reasons],
            **dict(self.data),
        }


def refusal(reasons: list[str], *sentences: str, **data: Any) -> Answer:
    return Answer(False, data, tuple(dict.fromkeys(reasons)), tuple(sentences))


def agent_view(item: Item) -> dict[str, Any]:
    """What an agent sees of its item. A record edited into a shape no write makes: what names
    it, ``malformed``, and no document read off it."""
    try:
        return _agent_view(item)
    except SHAPE_ERRORS:
        return {**_names(item), "digest": None, "proposal": None, "malformed": True}


def _names(item: Item) -> dict[str, Any]:
    return {
        "item": item.id,
        "ref": f"{item.automation}/{item.key}",
        "automation": item.automation,
        "key": item.key,
        "state": item.state.value,
        "attempts": item.attempts,
        "max_attempts": item.max_attempts,
        "next_eligible_at": format_time(item.next_eligible_at),
    }


def _agent_view(item: Item) -> dict[str, Any]:
    d = item.data
    proposal = d.get("proposal")
    view: dict[str, Any] = {
        **_names(item),
        "digest": None if proposal is None else proposal["digest"],
        "proposal": None
        if proposal is None
        else {
            "action": proposal["action"],
            "target": proposal["target"],
            "params": to_plain(proposal["params"]),
            "rationale": proposal["rationale"],
            "edited_by": proposal.get("edited_by"),
            "required_approvals": proposal["required_approvals"],
            "approvals": len(proposal.get("approvals", ())),
        },
    }
    for name in ("rejection", "report", "exception", "result", "closure", "account", "failure"):
        if d.get(name) is not None:
            view[name] = to_plain(d.get(name))
    return view


def digest_of(value: Any) -> str | None:
    try:
        return digest(value)
    except (CanonicalError, TypeError, ValueError):
        return None


def same_proposal(proposal: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    held = {k: proposal.get(k) for k in wanted}
    return digest_of(to_plain(held)) == digest_of(dict(wanted))


def decision_status(item: Item, digest: str | None) -> str:
    """What a person decided on the proposal ``digest`` names (the current one if ``None``)."""
    proposal = item.doc("proposal")
    rejection = item.doc("rejection")
    ours = rejection is not None and (digest is None or rejection.get("digest") == digest)
    if ours and item.state in (State.CLOSED, State.CLASSIFIED):
        return "rejected"
    if proposal is not None and digest is not None and proposal["digest"] != digest:
        return "changed"
    if item.state is State.AWAITING_APPROVAL:
        return "waiting"
    if item.state is State.APPROVED:
        return "approved"
    return item.state.value
