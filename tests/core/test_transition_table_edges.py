"""The transition table's validator and ``commands_from`` at their edges: what a mutation pass
over ``core/transitions.py`` found no test holding (the rows themselves are held by
``docs/states.md``, which the table must generate exactly).

Each table here is the real one with a few rows taken out or added, so every other rule
still holds and only the rule under test can speak."""

from __future__ import annotations

from dataclasses import replace

import pytest

from stopline.core.states import STOP_STATES, State
from stopline.core.transitions import (
    TABLE,
    By,
    Cmd,
    TableError,
    Transition,
    commands_from,
    lookup,
    validate,
)
from stopline.core.verify import ILLEGAL_TRANSITION, verify_item

from .helpers import Harness, resealed

S = State
Table = dict[tuple[State | None, Cmd], Transition]


def edited(
    drop: tuple[tuple[State, Cmd], ...] = (),
    add: tuple[tuple[State, Cmd, frozenset[State], By], ...] = (),
) -> Table:
    t = dict(TABLE)
    for key in drop:
        del t[key]
    for src, cmd, targets, by in add:
        t[(src, cmd)] = Transition(src, cmd, targets, by, "test row")
    return t


def test_a_state_whose_one_way_on_may_also_stay_can_still_end() -> None:
    """awaiting_approval with only approve left (to itself or to approved, which can end):
    it can end, as one target that can end is enough."""
    t = edited(
        drop=(
            (S.AWAITING_APPROVAL, Cmd.REJECT),
            (S.AWAITING_APPROVAL, Cmd.CLOSE),
            (S.AWAITING_APPROVAL, Cmd.REINSPECT),
        )
    )
    assert lookup(S.AWAITING_APPROVAL, Cmd.APPROVE) is not None
    validate(t)  # raises TableError on any problem


def test_a_terminal_state_that_can_never_be_left_is_an_end() -> None:
    """completed and revision_completed with no revise (revision_prepared reached another
    way): a terminal state is an end in itself, final or not."""
    t = edited(
        drop=((S.COMPLETED, Cmd.REVISE), (S.REVISION_COMPLETED, Cmd.REVISE)),
        add=((S.EXCEPTION, Cmd.REVISE, frozenset({S.REVISION_PREPARED}), By.OPERATOR),),
    )
    validate(t)  # raises TableError on any problem


def test_an_exit_from_a_final_state_is_refused_even_beside_a_self_loop() -> None:
    """A row from closed to closed or observing leaves closed: an exit, not a loop."""
    both = frozenset({S.CLOSED, S.OBSERVING})
    t = edited(add=((S.CLOSED, Cmd.REINSPECT, both, By.OPERATOR),))
    with pytest.raises(TableError) as info:
        validate(t)
    assert "final state closed has an exit by reinspect" in str(info.value)
    t = edited(add=((S.FAILED, Cmd.NOTE, frozenset({S.FAILED, S.OBSERVING}), By.PARTICIPANT),))
    with pytest.raises(TableError) as info:
        validate(t)
    assert "final state failed has an exit by note" in str(info.value)


@pytest.mark.parametrize("state", list(S))
def test_commands_from_a_state_are_exactly_its_rows(state: State) -> None:
    """Every command listed for a state has a row from it, and every row is listed once
    (discover, the row from no item, belongs to no state)."""
    listed = commands_from(state)
    assert all(lookup(state, cmd) is not None for cmd in listed), listed
    assert sorted(listed) == sorted(cmd for (src, cmd) in TABLE if src is state)
    assert len(set(listed)) == len(listed)
    assert Cmd.DISCOVER not in listed
    if state in STOP_STATES:
        assert Cmd.CLOSE in listed


@pytest.mark.parametrize(
    ("start", "command", "legal", "forged"),
    [
        (S.EXHAUSTED, Cmd.RESUME, S.OBSERVING, S.REVISION_PREPARED),
        (S.EXHAUSTED, Cmd.RESUME, S.PENDING_READBACK, S.COMPLETED),
        (S.AWAITING_APPROVAL, Cmd.EDIT, S.AWAITING_APPROVAL, S.CLASSIFIED),
        (S.AWAITING_APPROVAL, Cmd.REJECT, S.CLASSIFIED, S.OBSERVING),
    ],
)
def test_a_person_s_move_the_table_never_allows_is_found_in_a_history(
    start: State, command: Cmd, legal: State, forged: State
) -> None:
    """An operator's event appended to a real history, chained and hashed: to a target of
    its row it is sound, to any other state verify finds it illegal (resume leads back to
    delivery work only, an edit keeps the proposal awaiting approval)."""
    h = Harness()
    h.to(start)
    last = h.events[-1]
    for target, expected in ((legal, []), (forged, [ILLEGAL_TRANSITION])):
        event = resealed(
            last,
            seq=last.seq + 1,
            command=command.value,
            actor="olivia",
            from_state=start,
            to_state=target,
            prev_hash=last.hash,
            detail={"author": {"kind": "human"}},
        )
        item = replace(h.it, state=target, seq=event.seq, head=event.hash)
        # the event's own findings (an edit that carries no proposal is also proposal_misplaced)
        found = [f for f in verify_item(item, [*h.events, event]) if f.kind == "event"]
        assert [(f.ref, f.field, f.reason) for f in found] == [
            (f"{h.item_id}#{event.seq}", "command", r) for r in expected
        ], target
