"""Replay an item's history: the hash chain, the sequence, legal transitions only, and the
documents that must agree with the events that wrote them (approvals, idempotency keys)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from . import severity
from .canonical import format_time
from .integrity import APPROVAL_UNRECORDED, RECORD_MALFORMED, Finding, author_findings
from .records import Event, Item
from .search import search_text
from .transitions import Cmd, lookup

CHAIN_BROKEN = "chain_broken"
SEQUENCE_GAP = "sequence_gap"
EVENT_ALTERED = "event_altered"
ILLEGAL_TRANSITION = "illegal_transition"
STATE_MISMATCH = "state_mismatch"
NO_EVENTS = "no_events"
HISTORY_LENGTH = "history_length"
HEAD_MISMATCH = "head_mismatch"
INCIDENT = "integrity_failed"
IDEMPOTENCY_UNRECORDED = "idempotency_unrecorded"
IDEMPOTENCY_MISSING = "idempotency_missing"
IDEMPOTENCY_MISMATCH = "idempotency_mismatch"
STATE_CLASS_MISMATCH = "state_class_mismatch"
STOP_KEY_MISMATCH = "stop_key_mismatch"
PROPOSAL_MISPLACED = "proposal_misplaced"
MADE_BY = (Cmd.PROPOSE.value, Cmd.EDIT.value)  # the commands that make a proposal


def verify_item(item: Item, events: Sequence[Event]) -> list[Finding]:
    """Every problem found in ``item``'s history; an empty list means it is sound."""
    found: list[Finding] = []
    prev_hash = ""
    prev_state = None

    def add(seq: int, field: str, reason: str, detail: str) -> None:
        found.append(Finding("event", f"{item.id}#{seq}", field, reason, detail))

    for n, event in enumerate(events, start=1):
        if event.seq != n:
            add(event.seq, "seq", SEQUENCE_GAP, f"expected {n}")
        if event.item_id != item.id:
            add(event.seq, "item_id", CHAIN_BROKEN, f"belongs to {event.item_id}")
        if event.prev_hash != prev_hash:
            add(event.seq, "prev_hash", CHAIN_BROKEN, f"does not match event {n - 1}")
        if not event.hash_ok():
            add(event.seq, "hash", EVENT_ALTERED, "the event was altered")
        if event.from_state != prev_state:
            add(
                event.seq,
                "from_state",
                ILLEGAL_TRANSITION,
                f"starts in {event.from_state}, the previous event ended in {prev_state}",
            )
        try:
            row = lookup(event.from_state, Cmd(event.command))
        except ValueError:
            row = None
        if row is None or event.to_state not in row.targets:
            add(
                event.seq,
                "command",
                ILLEGAL_TRANSITION,
                f"{event.from_state} --{event.command}--> {event.to_state}",
            )
        found += author_findings(event, row)
        prev_hash, prev_state = event.hash, event.to_state
    ref = item.id
    if not events:
        found.append(Finding("item", ref, "events", NO_EVENTS, "the item has no events"))
    elif item.state != prev_state:
        found.append(
            Finding(
                "item",
                ref,
                "state",
                STATE_MISMATCH,
                f"state {item.state} does not follow from its events ({prev_state})",
            )
        )
    if item.seq != len(events):
        found.append(
            Finding(
                "item",
                ref,
                "history_length",
                HISTORY_LENGTH,
                f"history_length {item.seq} but {len(events)} events",
            )
        )
    if events and item.head != prev_hash:
        found.append(
            Finding("item", ref, "head", HEAD_MISMATCH, "the head does not match the last event")
        )
    # where the proposal was made is read on a sound chain only (a broken one is found above)
    placed = [] if found else placement_findings(item, events)
    return found + approval_findings(item, events) + placed


def placement_findings(item: Item, events: Sequence[Event]) -> list[Finding]:
    """A proposal that names the event it follows (``follows``, since 2026-12-07) was made by
    the last propose or edit event of the history, right after that event: a proposal made
    again, or copied from an earlier place, is not the one its approvals were given for."""
    proposal = item.doc("proposal")
    if not isinstance(proposal, Mapping) or "follows" not in proposal:
        return []
    made = next((e for e in reversed(events) if e.command in MADE_BY), None)
    if (
        made is not None
        and made.prev_hash == proposal["follows"]
        and made.digests.get("proposal") == proposal.get("digest")
    ):
        return []
    where = f"event {made.seq} ({made.command})" if made is not None else "no event"
    return [
        Finding(
            "item",
            item.id,
            "proposal.follows",
            PROPOSAL_MISPLACED,
            f"the proposal was not made where it says: {where} made the last proposal",
        )
    ]


def approval_findings(item: Item, events: Iterable[Event]) -> list[Finding]:
    """Each approval the item counts was recorded by an approve event of that actor, of that
    digest, at that time."""
    proposal = item.doc("proposal")
    if not proposal:
        return []
    # a row edited to a shape no write makes is reported, never raised on
    if not isinstance(proposal, Mapping):
        return [Finding("item", item.id, "proposal", RECORD_MALFORMED, "not an object")]
    approvals = proposal.get("approvals", ())
    if not isinstance(approvals, list | tuple):
        return [Finding("item", item.id, "proposal.approvals", RECORD_MALFORMED, "not a list")]
    recorded = {
        (e.actor, str(e.digests.get("proposal")), format_time(e.at))
        for e in events
        if e.command == Cmd.APPROVE.value
    }
    found = []
    for approval in approvals:
        try:
            key = (approval["actor"], approval["digest"], approval["at"])
        except (KeyError, TypeError):
            key = None
        if key not in recorded:
            who = approval.get("actor") if isinstance(approval, Mapping) else approval
            found.append(
                Finding(
                    "item",
                    item.id,
                    "proposal.approvals",
                    APPROVAL_UNRECORDED,
                    f"no approve event records {who}'s approval",
                )
            )
    return found


def incidents(item: Item, events: Iterable[Event]) -> list[dict[str, Any]]:
    """Integrity failures the item's history recorded (stopped and kept, not hidden)."""
    return [
        {
            "item": item.id,
            "seq": e.seq,
            "command": e.command,
            "at": format_time(e.at),
            "findings": _as_recorded(e.detail.get("findings"))
            or _as_recorded(e.detail.get("integrity_findings")),
        }
        for e in events
        if INCIDENT in e.reasons
    ]


def _as_recorded(entries: Any) -> list[dict[str, Any]]:
    """An incident's findings as its event holds them; an entry edited into anything but an
    object is shown as its text (a report of a store is never cut short by what it reports)."""
    if entries is None:
        return []
    if not isinstance(entries, list | tuple):
        entries = [entries]
    return [dict(f) if isinstance(f, Mapping) else {"detail": str(f)[:200]} for f in entries]


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def idempotency_findings(
    rows: Iterable[Mapping[str, Any]], histories: Mapping[str, Sequence[Event]]
) -> list[Finding]:
    """Every idempotency key row names an event written under it, and every event written
    under a key still has its row (a deleted row would let the command run twice)."""
    found: list[Finding] = []
    bound: dict[tuple[str, str], Event] = {}
    for item_id, events in histories.items():
        for event in events:
            key = event.digests.get("idempotency")
            if key:
                bound[(item_id, str(key))] = event
    seen: set[tuple[str, str]] = set()
    for row in rows:
        digest_of_key = key_digest(str(row["key"]))
        ref = digest_of_key[:12]
        where = (str(row["item_id"]), digest_of_key)
        written = bound.get(where)
        if written is None:
            found.append(
                Finding(
                    "idempotency",
                    ref,
                    "key",
                    IDEMPOTENCY_UNRECORDED,
                    "no event was written under this key",
                )
            )
            continue
        seen.add(where)
        decision = row.get("decision")
        if not _decision_matches(decision, written):
            found.append(
                Finding(
                    "idempotency",
                    ref,
                    "decision",
                    IDEMPOTENCY_MISMATCH,
                    f"the stored decision is not event {written.seq}'s",
                )
            )
    for (item_id, digest_of_key), event in sorted(bound.items()):
        if (item_id, digest_of_key) not in seen:
            found.append(
                Finding(
                    "idempotency",
                    digest_of_key[:12],
                    "row",
                    IDEMPOTENCY_MISSING,
                    f"event {item_id}#{event.seq} was written under a key whose row is gone",
                )
            )
    return found


def _decision_matches(decision: Any, event: Event) -> bool:
    try:
        doc = json.loads(decision) if isinstance(decision, str | bytes) else dict(decision)
        return bool(
            doc["decision"] == "applied"
            and doc["sequence"] == event.seq
            and doc["state"] == event.to_state.value
            and doc["item"] == event.item_id
        )
    except (ValueError, KeyError, TypeError):
        return False


def entered_at(item: Item, events: Sequence[Event]) -> datetime:
    """When ``item`` entered its current state: the time of its last event that changed the
    state (creation included), else its creation time. Last in the history's order, as every
    write sets it, not the latest time: event times are each writer's clock, and a clock that
    stepped back must not read as an edited row."""
    for event in reversed(events):
        if event.from_state is None or event.from_state != event.to_state:
            return event.at
    return item.created_at


def stop_key_findings(
    item: Item,
    events: Sequence[Event],
    stored_since: datetime | None,
    stored_rank: int,
    stored_text: str | None,
) -> list[Finding]:
    """The inbox keys of ``item``'s row (``state_since``, ``severity_rank``, ``search_text``)
    against what its events and data say: a row edited to move an item in, or out of, the
    inbox's order, its overdue list or a search's results is found."""
    found = []
    expected = entered_at(item, events)
    if stored_since != expected:
        found.append(
            Finding(
                "item",
                item.id,
                "state_since",
                STOP_KEY_MISMATCH,
                f"the row says {stored_since}, its events say {expected}",
            )
        )
    rank = severity.rank(item.data)
    if stored_rank != rank:
        found.append(
            Finding(
                "item",
                item.id,
                "severity_rank",
                STOP_KEY_MISMATCH,
                f"the row says {stored_rank}, its data says {rank}",
            )
        )
    text = search_text(item)
    if stored_text != text:
        found.append(
            Finding(
                "item",
                item.id,
                "search_text",
                STOP_KEY_MISMATCH,
                f"the row says {stored_text!r}, its data says {text!r}",
            )
        )
    return found
