"""core/notes.py and core/authorship.py: a note keeps everything but the history, and every
event records who wrote it, as data that no rule reads."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stopline.core.authorship import AUTOMATION, HUMAN, Author, author_problems, event_author
from stopline.core.canonical import digest
from stopline.core.commands import Approve, Close, Discover, Note, Reject
from stopline.core.decide import decide
from stopline.core.decision import Outcome
from stopline.core.integrity import AUTHOR_MALFORMED, author_findings
from stopline.core.reasons import Reason
from stopline.core.records import Actor, Event, Item
from stopline.core.rights import rights
from stopline.core.states import State
from stopline.core.step import Context
from stopline.core.transitions import By, Cmd, lookup
from stopline.core.verify import verify_item

from .helpers import Harness, actors, policy

S = State
AI = Author("ai", "helper-7", "example-family")
WALKABLE = [
    S.OBSERVING,
    S.CLASSIFIED,
    S.AWAITING_APPROVAL,
    S.APPROVED,
    S.PENDING_READBACK,
    S.READY_FOR_REVIEW,
    S.EXCEPTION,
    S.EXHAUSTED,
    S.REVISION_FAILED,
    S.COMPLETED,
    S.REVISION_PREPARED,
]


def kept(before: Item, after: Item) -> dict[str, Any]:
    """What a note must leave as it was."""
    fields = ("state", "attempts", "max_attempts", "next_eligible_at", "attempt_log", "data")
    fields += ("lease_owner", "lease_token", "lease_expires_at", "claimed_at", "created_at")
    fields += ("updated_at",)  # how long it has waited is kept
    return {f: (getattr(before, f), getattr(after, f)) for f in fields}


def walked(state: State) -> Harness:
    h = Harness()
    h.to(state)
    return h


def closed() -> Harness:
    h = walked(S.AWAITING_APPROVAL)
    h.ok(Close("olivia", "not needed"), S.CLOSED)
    return h


# --- a note ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("state", WALKABLE, ids=lambda s: s.value)
def test_a_note_keeps_the_state_and_every_document(state: State) -> None:
    """In every state a participant's note adds one event and changes nothing else."""
    h = walked(state)
    if h.it.lease_owner is not None:  # a held step: the note waits until the lease is gone
        h.clock.advance(3600)
    before = h.it
    decision = h.ok(Note("olivia", "looked at it; fine"), state)
    after = h.it
    assert all(b == a for b, a in kept(before, after).values()), kept(before, after)
    assert (after.seq, after.version) == (before.seq + 1, before.version + 1)
    event = decision.event
    assert event is not None and event.command == "note" and event.from_state is state
    assert event.detail["body"] == "looked at it; fine"
    assert event.detail["author"] == {"kind": "human"}


@pytest.mark.parametrize("finish", ["close", "fail"])
def test_a_note_on_a_final_state_keeps_it(finish: str) -> None:
    """closed and failed take a note (they take nothing else) and stay closed or failed."""
    h = closed() if finish == "close" else walked(S.EXHAUSTED)
    if finish == "fail":
        item = replace(h.it, state=S.FAILED)  # no walk ends in failed without a hook's word
        d = decide(item, Note("olivia", "post-mortem in the wiki"), h.ctx())
        assert d.outcome is Outcome.APPLIED and d.state is S.FAILED
        return
    h.ok(Note("alice", "post-mortem in the wiki"), S.CLOSED)
    h.ok(Note("alice", "and a second thought"), S.CLOSED)
    assert [e.command for e in h.events[-2:]] == ["note", "note"]


def test_who_may_note_is_who_holds_a_right_on_the_item() -> None:
    """Operators, approvers, publishers may note; a viewer (no role) and a stranger may not."""
    h = walked(S.AWAITING_APPROVAL)
    for name in ("olivia", "alice", "carol"):
        assert rights(h.it, name, h.ctx())["note"].allowed, name
        h.ok(Note(name, f"{name} was here"))
    h.refused(Note("nora", "a viewer"), Reason.ACTOR_NOT_AUTHORIZED)
    h.refused(Note("stranger", "unknown"), Reason.ACTOR_UNKNOWN)
    h.refused(Note("gone", "revoked"), Reason.ACTOR_UNKNOWN)
    assert not rights(h.it, "nora", h.ctx())["note"].allowed


@pytest.mark.parametrize(
    "body",
    ["", "   ", "\n\t", "x" * 262_145, "lone \ud800 surrogate"],
    ids=["empty", "blank", "whitespace", "over-string-limit", "lone-surrogate"],
)
def test_a_body_outside_the_input_limits_is_invalid_input(body: str) -> None:
    h = walked(S.EXCEPTION)
    h.refused(Note("olivia", body), Reason.INVALID_INPUT)


def test_a_note_waits_while_a_worker_holds_the_item() -> None:
    """A live lease refuses the note (lease_held): the worker's commit would lose its guard."""
    h = walked(S.OBSERVING)
    h.claim()
    h.refused(Note("olivia", "while it runs"), Reason.LEASE_HELD)
    h.clock.advance(3600)  # the lease ran out
    held = h.it
    d = h.ok(Note("olivia", "after it ran"), S.OBSERVING)
    lease = ("lease_owner", "lease_token", "lease_expires_at", "claimed_at")
    assert held.lease_owner is not None
    assert [getattr(h.it, f) for f in lease] == [getattr(held, f) for f in lease]
    assert d.event is not None and d.event.digests["body"] == digest("after it ran")


def test_an_agent_notes_the_item_it_started_and_only_while_it_is_an_agent() -> None:
    """A note is the one people's command an agent may give, on an item it started itself: not
    on another agent's item, and not once its name holds the agent role no more."""
    me, other = Actor("agent-7", frozenset({"agent"})), Actor("agent-8", frozenset({"agent"}))
    h = Harness(policy=policy(agent=True), actors=actors(me, other))
    h.ok(Discover(h.item_id, "auto", "k1", {"n": 1}, agent="agent-7"), S.OBSERVING)
    assert rights(h.it, "agent-7", h.ctx())["note"].allowed
    assert not rights(h.it, "agent-8", h.ctx())["note"].allowed
    h.refused(Note("agent-8", "not mine"), Reason.AGENT_FORBIDDEN)
    h.ok(Note("agent-7", "checked the dashboard"), S.OBSERVING)
    demoted = Context(h.now, h.policy, actors(Actor("agent-7", frozenset()), other))
    found = decide(h.it, Note("agent-7", "still here"), demoted)
    assert found.reasons == (Reason.ACTOR_NOT_AUTHORIZED,)
    assert not rights(h.it, "agent-7", demoted)["note"].allowed


# --- authors ----------------------------------------------------------------------------------------


def test_every_event_records_its_author() -> None:
    """Discovery and every worker step are automation; a person's command is human."""
    h = walked(S.AWAITING_APPROVAL)
    h.ok(Approve("alice", h.digest()))
    by = {e.command: event_author(e.detail) for e in h.events}
    assert by["discover"] == by["observe"] == by["propose"] == {"kind": "automation"}
    assert by["approve"] == {"kind": "human"}
    assert all(event_author(e.detail) is not None for e in h.events)


def test_an_ai_author_is_recorded_with_its_name_and_family() -> None:
    h = walked(S.EXCEPTION)
    d = h.ok(Note("olivia", "summarised the logs", author=AI))
    assert d.event is not None
    assert d.event.detail["author"] == {
        "kind": "ai",
        "name": "helper-7",
        "family": "example-family",
    }


@pytest.mark.parametrize(
    "author",
    [
        Author("robot"),
        Author("ai"),
        Author("ai", "n"),
        Author("ai", "", "f"),
        Author("ai", "n" * 201, "f"),
        Author("ai", "bad\nname", "f"),
        Author("human", "alice"),
        Author("automation", "", "fam"),
    ],
)
def test_a_malformed_author_is_invalid_input(author: Author) -> None:
    h = walked(S.EXCEPTION)
    h.refused(Note("olivia", "x", author=author), Reason.INVALID_INPUT)
    h.refused(Close("olivia", "x", author=author), Reason.INVALID_INPUT)


def test_author_problems_name_every_fault() -> None:
    assert author_problems({"kind": "human"}) == []
    assert author_problems({"kind": "ai", "name": "a", "family": "b"}) == []
    assert author_problems("ai") != []
    assert "author.x is not a field" in author_problems({"kind": "human", "x": 1})
    # a person or an automation names no model, not even an empty one (the API's schema says
    # so too: a fuzzer's {"kind": "human", "name": "", "family": ""} was once accepted)
    for part, value in (("name", ""), ("family", ""), ("name", None), ("family", "x")):
        assert author_problems({"kind": "human", part: value}) == [
            f"author.{part} is only for an ai author"
        ]
    assert author_problems({"kind": "automation", "name": ""}) != []
    assert author_problems({"kind": "ai", "name": 3, "family": "b"}) == [
        "author.name must be a string"
    ]


def test_a_worker_event_is_automation_whatever_anyone_declares() -> None:
    """The author of a worker's event is fixed by the transition table's by column."""
    h = walked(S.CLASSIFIED)
    ctx = replace(h.ctx(), author=HUMAN)
    h.claim()
    from stopline.core.commands import Report

    d = decide(h.it, Report(**h.lease(), report={"summary": "s"}), ctx)
    assert d.event is not None and d.event.detail["author"] == AUTOMATION.to_plain()


def test_a_human_claim_by_an_agent_role_actor_grants_nothing() -> None:
    """An actor holding only the agent role, declaring itself human, is refused as it is when
    it declares itself an ai: the author is never authority."""
    agent = Actor("agent-7", frozenset({"agent"}))
    h = Harness(actors=actors(agent))
    h.to(S.AWAITING_APPROVAL)
    digest = h.digest()
    claims = [None, HUMAN, AI, AUTOMATION]
    answers = {
        str(a): decide(h.it, Approve("agent-7", digest, author=a), h.ctx()).reasons for a in claims
    }
    assert set(answers.values()) == {(Reason.AGENT_FORBIDDEN,)}, answers
    for claim in claims:
        for command in (Reject("agent-7", "no", author=claim), Close("agent-7", "x", author=claim)):
            d = decide(h.it, command, h.ctx())
            assert d.outcome is Outcome.REFUSED
            assert Reason.AGENT_FORBIDDEN in d.reasons
        note = decide(h.it, Note("agent-7", "hello", author=claim), h.ctx())
        assert note.reasons == (Reason.AGENT_FORBIDDEN,)
    assert not any(v.allowed for v in rights(h.it, "agent-7", h.ctx()).values())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    state=st.sampled_from(WALKABLE),
    actor=st.sampled_from(["olivia", "alice", "carol", "nora", "stranger", "agent-7"]),
    which=st.sampled_from(["approve", "reject", "close", "note"]),
    author=st.sampled_from([None, HUMAN, AI, AUTOMATION]),
)
def test_the_author_never_changes_a_decision(
    state: State, actor: str, which: str, author: Author | None
) -> None:
    """For any command, actor and state, every declared author decides exactly as a person."""
    h = Harness(actors=actors(Actor("agent-7", frozenset({"agent"}))))
    h.to(state)
    h.clock.advance(3600)
    proposal = h.it.doc("proposal") or {}
    make = {
        "approve": lambda a: Approve(actor, proposal.get("digest", "x"), author=a),
        "reject": lambda a: Reject(actor, "no", author=a),
        "close": lambda a: Close(actor, "done", author=a),
        "note": lambda a: Note(actor, "a note", author=a),
    }[which]
    plain, declared = decide(h.it, make(None), h.ctx()), decide(h.it, make(author), h.ctx())
    assert (plain.outcome, plain.reasons, plain.state) == (
        declared.outcome,
        declared.reasons,
        declared.state,
    )
    if plain.after is not None and declared.after is not None:
        assert plain.after.data == declared.after.data
        assert plain.event is not None and declared.event is not None
        expected = (author or HUMAN).to_plain()
        assert declared.event.detail["author"] == expected


# --- the property: notes never move anything -------------------------------------------------------

bodies = st.text(min_size=1, max_size=40).filter(lambda t: t.strip() != "")


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    state=st.sampled_from(WALKABLE),
    notes=st.lists(
        st.tuples(
            st.sampled_from(["olivia", "alice", "nora", "stranger", "pat"]),
            st.one_of(bodies, st.sampled_from(["", " "])),
            st.sampled_from([None, HUMAN, AI]),
        ),
        max_size=6,
    ),
)
def test_notes_never_change_the_state_or_the_documents(
    state: State, notes: list[tuple[str, str, Author | None]]
) -> None:
    """Any run of notes, applied or refused, leaves the state and every document as they were,
    adds exactly one sound event per applied note, and the history replays clean."""
    h = walked(state)
    h.clock.advance(3600)
    first = h.it
    applied = 0
    for actor, body, author in notes:
        d = h.apply(Note(actor, body, author=author))
        applied += d.outcome is Outcome.APPLIED
        assert d.outcome is not Outcome.ZERO_WRITE
    assert all(b == a for b, a in kept(first, h.it).values())
    assert h.it.seq == first.seq + applied
    assert verify_item(h.it, h.events) == []


# --- what verify sees of an author ---------------------------------------------------------------


def _edited(event: Event, author: Any) -> Event:
    detail = {**event.detail, "author": author}
    return Event.sealed(**{**{k: getattr(event, k) for k in event.body()}, "detail": detail})


def test_verify_finds_an_edited_author() -> None:
    """An author edited in place breaks the event hash; a re-hashed one that is malformed, or a
    worker event re-hashed as a person's, is author_malformed."""
    h = walked(S.AWAITING_APPROVAL)
    propose = h.events[-1]
    edited = replace(propose, detail={**propose.detail, "author": {"kind": "human"}})
    assert not edited.hash_ok()
    rehashed = _edited(propose, {"kind": "human"})
    row = lookup(propose.from_state, Cmd(propose.command))
    assert row is not None and row.by is By.WORKER
    assert [f.reason for f in author_findings(rehashed, row)] == [AUTHOR_MALFORMED]
    assert [f.reason for f in author_findings(_edited(propose, {"kind": "god"}), row)] == [
        AUTHOR_MALFORMED
    ]


def test_an_event_without_an_author_is_sound() -> None:
    """Events written before authors were kept carry none, and verify accepts them."""
    h = walked(S.EXCEPTION)
    legacy = _edited(h.events[-1], None)
    legacy = Event.sealed(
        **{
            **{k: getattr(legacy, k) for k in legacy.body()},
            "detail": {k: v for k, v in h.events[-1].detail.items() if k != "author"},
        }
    )
    assert author_findings(legacy, None) == []


def test_the_context_author_is_not_read_by_rights() -> None:
    """rights() answers the same whatever author the context carries."""
    h = walked(S.AWAITING_APPROVAL)
    base = rights(h.it, "alice", h.ctx())
    for author in (HUMAN, AI, AUTOMATION):
        assert rights(h.it, "alice", replace(h.ctx(), author=author)) == base
    assert Context(h.now).author is None
