"""What ``core.verify`` finds in a history edited behind the store, each check on its own.

A writer of the database can renumber, re-chain and re-hash events, edit the item row, the
approvals a proposal counts, the idempotency rows and the inbox keys. Each test here makes one
such edit on a history the real commands wrote, and holds the exact findings (kind, ref,
field, reason): the tamper catalogue sees most of these edits through ``stopline verify``, but
only as a set of reasons, and most of it runs only in slow runs. The edits came from a
mutation pass over ``core/verify.py``: each test fails with a mutant that no test killed."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from stopline.core import severity
from stopline.core.canonical import format_time
from stopline.core.commands import Approve, Close, NeedsEyes, Note
from stopline.core.integrity import APPROVAL_UNRECORDED, AUTHOR_MALFORMED, Finding
from stopline.core.records import Event, Item
from stopline.core.search import search_text
from stopline.core.states import State
from stopline.core.step import bind_idempotency
from stopline.core.verify import (
    CHAIN_BROKEN,
    HEAD_MISMATCH,
    HISTORY_LENGTH,
    IDEMPOTENCY_MISMATCH,
    IDEMPOTENCY_MISSING,
    IDEMPOTENCY_UNRECORDED,
    ILLEGAL_TRANSITION,
    SEQUENCE_GAP,
    STATE_MISMATCH,
    STOP_KEY_MISMATCH,
    entered_at,
    idempotency_findings,
    incidents,
    key_digest,
    stop_key_findings,
    verify_item,
)

from .helpers import Harness, policy, resealed, with_proposal

S = State
ID = "auto-k1"


def where(findings: Iterable[Finding]) -> list[tuple[str, str, str, str]]:
    """(kind, ref, field, reason) of every finding, in order."""
    return [(f.kind, f.ref, f.field, f.reason) for f in findings]


def awaiting() -> Harness:
    """discover, observe, propose: three events, the item awaiting approval."""
    h = Harness()
    h.to_awaiting()
    assert len(h.events) == 3
    return h


def rechained(events: Sequence[Event], prev_hash: str = "") -> list[Event]:
    """``events`` numbered from 1 and chained again from ``prev_hash``, each hashed again:
    what a writer who recomputes every hash leaves."""
    out: list[Event] = []
    for n, event in enumerate(events, start=1):
        out.append(resealed(event, seq=n, prev_hash=out[-1].hash if out else prev_hash))
    return out


def matched(item: Item, events: Sequence[Event]) -> Item:
    """``item`` with its row made to agree with ``events`` (length, head, state)."""
    return replace(item, seq=len(events), head=events[-1].hash, state=events[-1].to_state)


# --- the chain and the sequence ------------------------------------------------------------


def test_a_history_as_written_is_sound() -> None:
    h = awaiting()
    assert verify_item(h.it, h.events) == []
    assert verify_item(h.it, rechained(h.events)) == []  # re-hashing as it was changes nothing


def test_an_event_numbered_past_its_place_is_a_gap() -> None:
    """The last event renumbered 3 -> 4 and hashed again, the row's head made to match: a
    gap forward is found as well as a number used twice."""
    h = awaiting()
    last = resealed(h.events[-1], seq=4)
    events = [*h.events[:-1], last]
    item = replace(h.it, head=last.hash)
    assert where(verify_item(item, events)) == [("event", f"{ID}#4", "seq", SEQUENCE_GAP)]
    twice = resealed(h.events[-1], seq=2)
    item = replace(h.it, head=twice.hash)
    found = verify_item(item, [*h.events[:-1], twice])
    assert where(found) == [("event", f"{ID}#2", "seq", SEQUENCE_GAP)]


def test_an_event_of_another_item_breaks_the_chain() -> None:
    h = awaiting()
    moved = resealed(h.events[-1], item_id="auto-k2")
    item = replace(h.it, head=moved.hash)
    found = verify_item(item, [*h.events[:-1], moved])
    assert where(found) == [("event", f"{ID}#3", "item_id", CHAIN_BROKEN)]
    assert "auto-k2" in found[0].detail


def test_a_first_event_chained_to_an_earlier_one_breaks_the_chain() -> None:
    """The whole history re-chained consistently, but its first event names a predecessor:
    the first event of a history follows nothing."""
    h = awaiting()
    events = rechained(h.events, prev_hash="0" * 64)
    found = verify_item(matched(h.it, events), events)
    assert where(found) == [("event", f"{ID}#1", "prev_hash", CHAIN_BROKEN)]


def test_a_history_cut_in_front_renumbered_and_rechained_is_seen() -> None:
    """The discover event deleted, the rest renumbered, re-chained and hashed again, the row
    made to match: every hash and number holds, but the first event does not start the
    item's life (observe starts in observing, not in nothing)."""
    h = awaiting()
    events = rechained(h.events[1:])
    found = verify_item(matched(h.it, events), events)
    assert where(found) == [("event", f"{ID}#1", "from_state", ILLEGAL_TRANSITION)]


def test_an_event_altered_in_place_is_seen() -> None:
    h = awaiting()
    altered = replace(h.events[1], detail={**h.events[1].detail, "forged": True})
    found = verify_item(h.it, [h.events[0], altered, h.events[2]])
    assert where(found) == [("event", f"{ID}#2", "hash", "event_altered")]


# --- legal moves and authors ----------------------------------------------------------------


def test_a_move_the_table_does_not_allow_is_illegal() -> None:
    """propose leads from classified to awaiting_approval or approved, never to completed."""
    h = awaiting()
    events = rechained([*h.events[:-1], replace(h.events[-1], to_state=S.COMPLETED)])
    found = verify_item(matched(h.it, events), events)
    assert where(found) == [("event", f"{ID}#3", "command", ILLEGAL_TRANSITION)]


def test_a_command_that_does_not_exist_is_illegal_not_an_error() -> None:
    h = awaiting()
    events = rechained([*h.events[:-1], replace(h.events[-1], command="teleport")])
    found = verify_item(matched(h.it, events), events)
    assert where(found) == [("event", f"{ID}#3", "command", ILLEGAL_TRANSITION)]


def test_a_worker_event_written_as_a_person_is_malformed() -> None:
    """The observe event (a worker's command) re-hashed with a human author."""
    h = awaiting()
    observe = h.events[1]
    forged = replace(observe, detail={**observe.detail, "author": {"kind": "human"}})
    events = rechained([h.events[0], forged, h.events[2]])
    found = verify_item(matched(h.it, events), events)
    assert where(found) == [("event", f"{ID}#2", "author", AUTHOR_MALFORMED)]


# --- the item row against its history -------------------------------------------------------


def test_a_row_state_its_events_never_reached_is_a_mismatch() -> None:
    h = awaiting()
    found = verify_item(replace(h.it, state=S.APPROVED), h.events)
    assert where(found) == [("item", ID, "state", STATE_MISMATCH)]


@pytest.mark.parametrize("delta", [-1, 1])
def test_a_history_length_either_way_off_is_found(delta: int) -> None:
    h = awaiting()
    found = verify_item(replace(h.it, seq=h.it.seq + delta), h.events)
    assert where(found) == [("item", ID, "history_length", HISTORY_LENGTH)]


def test_the_head_of_a_history_of_one_event_is_checked() -> None:
    h = Harness()
    h.discover()
    assert len(h.events) == 1
    found = verify_item(replace(h.it, head="0" * 64), h.events)
    assert where(found) == [("item", ID, "head", HEAD_MISMATCH)]


# --- approvals counted against the approve events -------------------------------------------


def approved() -> tuple[Harness, dict[str, Any]]:
    """An item approved by alice, and her approval as the proposal counts it."""
    h = Harness()
    h.to_approved()
    (entry,) = h.it.doc("proposal")["approvals"]
    assert verify_item(h.it, h.events) == []
    return h, dict(entry)


def unrecorded(item: Item, events: Sequence[Event]) -> list[tuple[str, str, str, str]]:
    return where(f for f in verify_item(item, events) if f.reason == APPROVAL_UNRECORDED)


def test_an_approval_counted_at_another_time_is_unrecorded() -> None:
    h, entry = approved()
    later = format_time(h.events[-1].at + timedelta(seconds=1))
    item = with_proposal(h.it, approvals=[{**entry, "at": later}])
    assert unrecorded(item, h.events) == [("item", ID, "proposal.approvals", APPROVAL_UNRECORDED)]


def test_an_approval_counted_for_another_digest_is_unrecorded() -> None:
    h, entry = approved()
    item = with_proposal(h.it, approvals=[{**entry, "digest": "e" * 64}])
    assert unrecorded(item, h.events) == [("item", ID, "proposal.approvals", APPROVAL_UNRECORDED)]


def test_only_an_approve_event_records_an_approval() -> None:
    """An entry naming the worker, the digest and the time of its propose event (which
    carries that digest) records no approval."""
    h, entry = approved()
    propose = next(e for e in h.events if e.command == "propose")
    assert propose.digests["proposal"] == entry["digest"]
    forged = {**entry, "actor": propose.actor, "at": format_time(propose.at)}
    item = with_proposal(h.it, approvals=[entry, forged])
    found = unrecorded(item, h.events)
    assert found == [("item", ID, "proposal.approvals", APPROVAL_UNRECORDED)]


@pytest.mark.parametrize("entry", ["alice", None, 7, ["alice"], {"actor": "alice"}])
def test_an_approval_entry_of_the_wrong_shape_is_unrecorded_not_an_error(entry: Any) -> None:
    h, real = approved()
    item = with_proposal(h.it, approvals=[real, entry])
    assert unrecorded(item, h.events) == [("item", ID, "proposal.approvals", APPROVAL_UNRECORDED)]


# --- recorded incidents ---------------------------------------------------------------------


def test_a_close_on_findings_is_a_recorded_incident() -> None:
    """An operator's close of a record found wrong keeps the findings (``integrity_findings``)
    and is listed with them; a plain close and a note are not incidents."""
    h = Harness()
    h.to_exception()
    h.clock.advance(60)
    h.ok(Note("olivia", "looking"))
    finding = Finding("item", ID, "proposal", "proposal_altered", "edited")
    h.clock.advance(60)
    h.ok(Close("olivia", "record edited", integrity=(finding,)), S.CLOSED)
    assert incidents(h.it, h.events) == [
        {
            "item": ID,
            "seq": 5,
            "command": "close",
            "at": format_time(h.now),
            "findings": [finding.to_plain()],
        }
    ]
    plain = Harness()
    plain.to_exception()
    plain.ok(Close("olivia", "nothing to do"), S.CLOSED)
    assert incidents(plain.it, plain.events) == []


# --- idempotency rows against the events written under their keys ---------------------------


def keyed(item_id: str, key: str) -> tuple[list[Event], dict[str, Any]]:
    """A history whose last event (alice's approval) was written under ``key``, and the
    idempotency row the store keeps for it."""
    h = Harness(item_id=item_id)
    h.to_awaiting()
    decision = bind_idempotency(h.decide(Approve("alice", h.digest())), key_digest(key))
    assert decision.event is not None
    row = {
        "key": key,
        "command_digest": "c" * 64,
        "item_id": item_id,
        "decision": json.dumps(decision.to_plain()),
    }
    return [*h.events, decision.event], row


def two_keyed() -> tuple[dict[str, list[Event]], list[dict[str, Any]]]:
    one, row_one = keyed("auto-k1", "key-1")
    two, row_two = keyed("auto-k2", "key-2")
    return {"auto-k1": one, "auto-k2": two}, [row_one, row_two]


def test_idempotency_rows_as_written_have_no_findings() -> None:
    histories, rows = two_keyed()
    assert idempotency_findings(rows, histories) == []


def test_a_row_of_a_key_no_event_was_written_under_is_unrecorded() -> None:
    histories, rows = two_keyed()
    added = {**rows[0], "key": "key-3"}
    for decision in (rows[0]["decision"], json.dumps({"decision": "refused"})):
        found = idempotency_findings([*rows, {**added, "decision": decision}], histories)
        assert where(found) == [
            ("idempotency", key_digest("key-3")[:12], "key", IDEMPOTENCY_UNRECORDED)
        ]
    moved = {**rows[1], "item_id": "auto-k1"}  # key-2's row moved to the other item
    found = idempotency_findings([rows[0], moved], histories)
    assert [f.reason for f in found] == [IDEMPOTENCY_UNRECORDED, IDEMPOTENCY_MISSING]


@pytest.mark.parametrize(
    "edit",
    [
        {"sequence": 3},
        {"sequence": 5},
        {"item": "auto-k2"},
        {"state": "awaiting_approval"},
        {"decision": "refused"},
    ],
)
def test_a_stored_decision_that_is_not_the_events_is_a_mismatch(edit: dict[str, Any]) -> None:
    histories, rows = two_keyed()
    stored = json.loads(rows[0]["decision"])
    assert (stored["sequence"], stored["state"]) == (4, "approved")
    edited = {**rows[0], "decision": json.dumps({**stored, **edit})}
    found = idempotency_findings([edited, rows[1]], histories)
    assert where(found) == [
        ("idempotency", key_digest("key-1")[:12], "decision", IDEMPOTENCY_MISMATCH)
    ]


@pytest.mark.parametrize("text", ["null", "[]", '"applied"', "7", "{", ""])
def test_a_stored_decision_that_is_not_a_document_is_a_mismatch(text: str) -> None:
    histories, rows = two_keyed()
    found = idempotency_findings([{**rows[0], "decision": text}, rows[1]], histories)
    assert [f.reason for f in found] == [IDEMPOTENCY_MISMATCH]


def test_a_deleted_row_is_missing_while_other_rows_stay() -> None:
    histories, rows = two_keyed()
    found = idempotency_findings([rows[0]], histories)
    assert where(found) == [("idempotency", key_digest("key-2")[:12], "row", IDEMPOTENCY_MISSING)]
    assert "auto-k2#4" in found[0].detail
    assert [f.reason for f in idempotency_findings([], histories)] == [IDEMPOTENCY_MISSING] * 2


# --- the inbox keys (state_since, severity_rank) --------------------------------------------


def test_the_state_since_is_the_last_move_not_a_later_self_loop_nor_creation() -> None:
    """Created at T0, stopped in exception 20 s later, a note 30 s after that: the item
    entered exception at the stop. Awaiting approval with one of two approvals: the time of
    the proposal, not of the approval."""
    h = Harness()
    h.discover()
    h.clock.advance(10)
    h.observe()
    h.clock.advance(10)
    h.claim()
    h.ok(NeedsEyes(**h.lease(), owner="ops", why="ambiguous"), S.EXCEPTION)
    stopped = h.now
    h.clock.advance(30)
    h.ok(Note("olivia", "looking"))
    assert h.it.created_at < stopped < h.events[-1].at
    assert entered_at(h.it, h.events) == stopped
    two = Harness(policy=policy(approvals=2))
    two.discover()
    two.clock.advance(10)
    two.observe()
    two.clock.advance(10)
    two.propose()
    proposed = two.now
    two.clock.advance(10)
    two.approve("alice")
    assert two.state is S.AWAITING_APPROVAL
    assert entered_at(two.it, two.events) == proposed


def test_inbox_keys_edited_either_way_are_found() -> None:
    h = Harness()
    h.to_exception()
    since, rank = entered_at(h.it, h.events), severity.rank(h.it.data)
    text = search_text(h.it)
    assert text is not None
    assert stop_key_findings(h.it, h.events, since, rank, text) == []
    for stored in (None, since - timedelta(seconds=1), since + timedelta(seconds=1)):
        found = stop_key_findings(h.it, h.events, stored, rank, text)
        assert where(found) == [("item", ID, "state_since", STOP_KEY_MISMATCH)], stored
    for stored_rank in (rank - 1, rank + 1):
        found = stop_key_findings(h.it, h.events, since, stored_rank, text)
        assert where(found) == [("item", ID, "severity_rank", STOP_KEY_MISMATCH)], stored_rank
    for stored_text in (None, "", text + " x", text.upper()):
        found = stop_key_findings(h.it, h.events, since, rank, stored_text)
        assert where(found) == [("item", ID, "search_text", STOP_KEY_MISMATCH)], stored_text
