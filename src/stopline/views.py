"""Plain views of items and events, shared by the CLI, the HTTP API and the web inbox."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from .commands.hints import next_commands as hints
from .core import severity
from .core.approval_outlook import Outlook, approval_outlook
from .core.artifact_records import readback_verified
from .core.canonical import format_time, to_plain
from .core.integrity import Finding
from .core.records import EMPTY, SHAPE_ERRORS, Actor, Event, Item
from .core.states import State

Actors = Mapping[str, Actor]

# A view of a record edited into a shape no write makes (``SHAPE_ERRORS``) says so and shows
# it as stored (its integrity findings say what is wrong); it never takes down a listing of
# every other item, nor the notifier.
MALFORMED = "its record is malformed (stopline verify names what is wrong)"


def proposal_view(
    proposal: Mapping[str, Any] | None, actors: Actors | None = None
) -> dict[str, Any] | None:
    """A proposal as the shells show it; with the registry ``actors``, its ``outlook``: who may
    still approve it and whether it can still be approved at all."""
    if proposal is None:
        return None
    plain: dict[str, Any] = to_plain(proposal)
    covered = {k: v for k, v in plain.items() if k not in ("digest", "approvals")}
    plain["covers"] = sorted(covered)
    plain["approvals_text"] = f"{len(plain['approvals'])} of {plain['required_approvals']}"
    if actors is not None:
        plain["outlook"] = approval_outlook(proposal, actors).to_plain()
    return plain


def outlook(item: Item, actors: Actors | None) -> Outlook | None:
    """Who may still approve the item's proposal (``None``: no proposal waits, or no registry
    was given)."""
    proposal = item.doc("proposal")
    if actors is None or proposal is None or item.state is not State.AWAITING_APPROVAL:
        return None
    try:
        return approval_outlook(proposal, actors)
    except SHAPE_ERRORS:
        return None


def artifact_view(record: Mapping[str, Any]) -> dict[str, Any]:
    content = record.get("content") or {}
    return {
        "key": record["key"],
        "title": record.get("title"),
        "content_hash": record.get("content_hash"),
        "qa_hash": record.get("qa_hash"),
        "qa": to_plain(record.get("qa")),
        "remote_id": record.get("remote_id"),
        "remote_version": record.get("remote_version"),
        "readback_hash": record.get("readback_hash"),
        "readback_verified": readback_verified(record),
        "last_op": record.get("last_op"),
        "intent": to_plain(record.get("intent")),
        "summary": content.get("summary"),
        "body": content.get("body"),
        "assets": [
            {k: a[k] for k in ("name", "media_type", "sha256")} for a in content.get("assets", ())
        ],
    }


def identity(item: Item) -> dict[str, Any]:
    """What names an item and where it stands, first in every view of it."""
    return {
        "id": item.id,
        "automation": item.automation,
        "key": item.key,
        "state": item.state.value,
        "state_class": item.state.state_class.value,
    }


def integrity_view(findings: Sequence[Finding]) -> dict[str, Any]:
    """Whether a record shown is what its history sealed (``Controller.record_findings``):
    ``ok``, and each finding. A record that is not is shown as stored, with no command."""
    return {"ok": not findings, "findings": [f.to_plain() for f in findings]}


def item_view(item: Item, actors: Actors | None = None) -> dict[str, Any]:
    """The ``stopline show --json`` object (docs/cli.md); with the registry ``actors``, the
    proposal carries its ``outlook``. A malformed record: :func:`stored_view`."""
    try:
        return _item_view(item, actors)
    except SHAPE_ERRORS:
        return stored_view(item)


def stored_view(item: Item) -> dict[str, Any]:
    """A record the views cannot read: what its columns say with every document empty (the
    view of the same row holding no data), ``malformed``, and its ``data`` as stored."""
    empty = _item_view(replace(item, data=EMPTY), None)
    return {**empty, "malformed": True, "data": to_plain(item.data)}


def _item_view(item: Item, actors: Actors | None) -> dict[str, Any]:
    d = item.data
    revision = d.get("revision")
    return {
        **identity(item),
        "history_length": item.seq,
        "version": item.version,
        "created_at": format_time(item.created_at),
        "updated_at": format_time(item.updated_at),
        "attempts": item.attempts,
        "max_attempts": item.max_attempts,
        "next_eligible_at": format_time(item.next_eligible_at),
        "account": to_plain(d.get("account")),
        "attempt_log": to_plain(list(item.attempt_log)),
        "grants": to_plain(d.get("grants", [])),
        "lease": None
        if item.lease_owner is None
        else {
            "owner": item.lease_owner,
            "token": item.lease_token,
            "expires_at": format_time(item.lease_expires_at) if item.lease_expires_at else None,
        },
        "fencing_token": item.lease_token,
        "input": to_plain(d.get("input")),
        "evidence": to_plain(d.get("evidence")),
        "classification": to_plain(d.get("classification")),
        "severity": severity.of(d.get("severity")),
        "proposal": proposal_view(d.get("proposal"), actors),
        "previous_proposal": proposal_view(d.get("previous_proposal")),
        "rejection": to_plain(d.get("rejection")),
        "report": to_plain(d.get("report")),
        "exception": to_plain(d.get("exception")),
        "corrective_input": to_plain(d.get("corrective_input")),
        "artifacts": [artifact_view(a) for a in d.get("artifacts", ())],
        "delivery_seq": d.get("delivery_seq", 0),
        "review_packet": to_plain(d.get("review_packet")),
        "review": to_plain(d.get("review")),
        "publication": to_plain(d.get("publication")),
        "revision": None
        if revision is None
        else {
            "sequence": revision["sequence"],
            "state": revision["state"],
            "request_digest": revision["request_digest"],
            "reason": revision.get("reason"),
            "scope": list(revision.get("scope", ())),
            "source_seq": revision.get("source_seq"),
            "superseded": to_plain(revision.get("superseded")),
            "failure": to_plain(revision.get("failure")),
        },
        "result": to_plain(d.get("result")),
        "closure": to_plain(d.get("closure")),
        "failure": to_plain(d.get("failure")),
    }


def summary_view(
    item: Item, actors: Actors | None = None, findings: Sequence[Finding] = ()
) -> dict[str, Any]:
    """One row of ``stopline items --json``; with the registry ``actors``, ``approvable`` says
    whether a waiting proposal can still get its approvals (``None``: nothing waits); with
    the record's integrity ``findings`` (``listing.checked``), ``next`` is ``close`` alone."""
    proposal = item.doc("proposal")
    seen = outlook(item, actors)
    return {
        **identity(item),
        "attempts": item.attempts,
        "max_attempts": item.max_attempts,
        "updated_at": format_time(item.updated_at),
        "next_eligible_at": format_time(item.next_eligible_at),
        "proposal_digest": proposal.get("digest") if isinstance(proposal, Mapping) else None,
        "why": unsealed(findings) if findings else why(item, actors),
        "next": next_commands(item, findings),
        "integrity": integrity_view(findings),
        "approvable": None if seen is None else seen.satisfiable,
    }


def event_view(event: Event) -> dict[str, Any]:
    return to_plain(event.to_plain())  # type: ignore[no-any-return]


def unsealed(findings: Sequence[Finding]) -> str:
    """One line for a record that is not what its history sealed: its first finding."""
    first = findings[0]
    return f"integrity_failed: {first.reason} ({first.field}); close it, act on nothing in it"


def why(item: Item, actors: Actors | None = None) -> str:
    """One line: why the item is where it is (with the registry ``actors``, a proposal that
    can never get its approvals says so)."""
    try:
        return _why(item, actors)
    except SHAPE_ERRORS:
        return MALFORMED


def _why(item: Item, actors: Actors | None) -> str:
    d = item.data
    state = item.state
    agent = d.get("agent")  # an item an AI agent started (docs/agents.md)
    if agent and state in (State.APPROVED, State.DELIVERING, State.PENDING_READBACK):
        return f"the agent {agent} carries it out (attempt {item.attempts} of {item.max_attempts})"
    if agent and state is State.COMPLETED:
        return f"carried out by the agent {agent}"
    if state is State.AWAITING_APPROVAL and d.get("proposal"):
        p = d["proposal"]
        line = f"{p['action']} on {p['target'] or '-'} needs approval ({len(p['approvals'])} of {p['required_approvals']})"
        if agent:
            line += f", proposed by the agent {agent}"
        seen = outlook(item, actors)
        if seen is not None and not seen.satisfiable:
            line += f"; CANNOT BE APPROVED: {len(seen.eligible)} eligible approver(s) left"
        return line
    if state is State.READY_FOR_REVIEW and d.get("report"):
        return str(d["report"]["data"].get("summary", "a result to read"))
    if state is State.EXCEPTION and d.get("exception"):
        e = d["exception"]
        return f"needs eyes ({e['owner']}): {e['why']}"
    if state is State.EXHAUSTED and d.get("account"):
        a = d["account"]
        last = a.get("last_error") or {}
        return f"{a['attempt_count']} of {a['max_attempts']} attempts spent; last: {last.get('class')}: {last.get('message')}"
    if state is State.REVISION_FAILED and d.get("revision"):
        f = d["revision"].get("failure") or {}
        return f"revision {d['revision']['sequence']} failed: {', '.join(f.get('reasons', []))}"
    if state in (State.COMPLETED, State.REVISION_COMPLETED):
        result = d.get("result") or {}
        if "nothing_to_do" in result:
            return f"nothing to do: {result['nothing_to_do']}"
        n = len(d.get("artifacts", ()))
        return f"delivered and read back ({n} artifact{'s' if n != 1 else ''})"
    if state is State.CLOSED and d.get("closure"):
        c = d["closure"]
        return f"{c['how']} by {c['actor']}" + (f": {c['reason']}" if c.get("reason") else "")
    if state is State.FAILED and d.get("failure"):
        return f"{d['failure']['class']}: {d['failure']['message']}"
    if state.is_work:
        return f"due {format_time(item.next_eligible_at)} (attempt {item.attempts} of {item.max_attempts})"
    return ""


def next_commands(item: Item, findings: Sequence[Finding] = ()) -> list[str]:
    """The commands a person would type next (ACTOR and REASON to fill in), from the table;
    with the record's integrity ``findings`` (``Controller.record_findings``), only ``close``;
    none for a malformed record (``stopline show`` names the way out, ``close``)."""
    try:
        return hints(item, sound=not findings)
    except SHAPE_ERRORS:
        return []
