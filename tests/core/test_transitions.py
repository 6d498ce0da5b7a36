"""The transition table: it validates, validate() catches malformed tables, docs are current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stopline.core import docgen
from stopline.core.states import (
    DELIVERED_STATES,
    FINAL_STATES,
    STOP_STATES,
    TERMINAL_STATES,
    WORK_STATES,
    State,
)
from stopline.core.transitions import (
    ANNOTATIONS,
    TABLE,
    By,
    Cmd,
    TableError,
    Transition,
    _build,
    commands_from,
    lookup,
    markdown,
    mermaid,
    validate,
)

S = State
PEOPLE = {By.OPERATOR, By.APPROVER, By.REVIEWER, By.PARTICIPANT}
Table = dict[tuple[State | None, Cmd], Transition]


def table() -> Table:
    return dict(TABLE)


def add(t: Table, src: State, cmd: Cmd, targets: list[State], by: By) -> Table:
    t[(src, cmd)] = Transition(src, cmd, frozenset(targets), by, "test row")
    return t


def problems(t: Table) -> str:
    with pytest.raises(TableError) as info:
        validate(t)
    return str(info.value)


def test_the_table_validates() -> None:
    """The real table passes validate() (it also ran at import time)."""
    assert validate(TABLE) is None
    assert len(TABLE) > 40


def test_state_classes_match_the_contract() -> None:
    """Work, stop and terminal states are exactly those docs/states.md lists."""
    assert {s.value for s in WORK_STATES} == {
        "observing",
        "classified",
        "approved",
        "delivering",
        "pending_readback",
        "revision_prepared",
    }
    assert {s.value for s in STOP_STATES} == {
        "awaiting_approval",
        "ready_for_review",
        "exception",
        "exhausted",
        "revision_failed",
    }
    assert {s.value for s in TERMINAL_STATES} == {
        "completed",
        "revision_completed",
        "closed",
        "failed",
    }


def test_validate_rejects_an_unreachable_state() -> None:
    """Without the report row nothing reaches ready_for_review."""
    t = table()
    del t[(S.CLASSIFIED, Cmd.REPORT)]
    assert "unreachable state ready_for_review" in problems(t)


def test_validate_rejects_an_exit_from_closed() -> None:
    """A row leaving closed is refused."""
    t = add(table(), S.CLOSED, Cmd.REINSPECT, [S.OBSERVING], By.OPERATOR)
    assert "final state closed has an exit by reinspect" in problems(t)


def test_validate_rejects_an_exit_from_failed() -> None:
    """A row leaving failed is refused, even when people issue it."""
    t = add(table(), S.FAILED, Cmd.RESUME, [S.OBSERVING], By.OPERATOR)
    assert "final state failed has an exit by resume" in problems(t)


def test_validate_rejects_any_command_accepted_by_a_final_state() -> None:
    """Even a self-loop on closed is refused: a final state accepts nothing."""
    t = add(table(), S.CLOSED, Cmd.FINALIZE, [S.CLOSED], By.OPERATOR)
    message = problems(t)
    assert "final state closed accepts finalize" in message
    assert "has an exit" not in message


def test_validate_rejects_a_dead_end_state() -> None:
    """An exception that can only loop on itself never ends."""
    t = table()
    for cmd in (Cmd.REINSPECT, Cmd.RESOLVE, Cmd.CLOSE):
        del t[(S.EXCEPTION, cmd)]
    assert (S.EXCEPTION, Cmd.RECONCILE) in t
    assert "state exception can never reach a terminal state" in problems(t)


def test_validate_rejects_a_stop_state_left_by_a_worker() -> None:
    """A worker may never move an item out of awaiting_approval."""
    t = add(table(), S.AWAITING_APPROVAL, Cmd.EXECUTE, [S.DELIVERING], By.WORKER)
    assert "stop state awaiting_approval left by worker via execute" in problems(t)


def test_validate_rejects_a_stop_state_left_by_the_system() -> None:
    """Nor may the scheduler or the sweeper (a re-discovery of an exhausted item)."""
    t = add(table(), S.EXHAUSTED, Cmd.DISCOVER, [S.OBSERVING], By.SYSTEM)
    assert "stop state exhausted left by system via discover" in problems(t)


def test_validate_names_every_problem() -> None:
    """Several defects are all reported in one error."""
    t = add(table(), S.CLOSED, Cmd.REINSPECT, [S.OBSERVING], By.OPERATOR)
    add(t, S.REVISION_FAILED, Cmd.RETRY, [S.REVISION_PREPARED], By.WORKER)
    del t[(S.CLASSIFIED, Cmd.REPORT)]
    message = problems(t)
    assert "final state closed has an exit by reinspect" in message
    assert "stop state revision_failed left by worker via retry" in message
    assert "unreachable state ready_for_review" in message


def test_build_rejects_duplicate_rows() -> None:
    """Two rows for one (state, command) pair are refused."""
    row = TABLE[(S.OBSERVING, Cmd.OBSERVE)]
    with pytest.raises(TableError, match="duplicate row"):
        _build([row, row])


def test_stop_states_are_left_only_by_people() -> None:
    """Every row out of a stop state is a person's command, and each stop state can be left."""
    for (src, cmd), row in TABLE.items():
        if src is not None and src.is_stop:
            assert row.by in PEOPLE, (src, cmd, row.by)
    for state in STOP_STATES:
        exits = [lookup(state, c) for c in commands_from(state)]
        assert any(r is not None and r.targets - {state} for r in exits), state
        assert Cmd.CLOSE in commands_from(state)


def test_work_states_are_left_only_by_workers() -> None:
    """Every row out of a work state is a worker's step (a note moves nothing)."""
    for (src, cmd), row in TABLE.items():
        if src is not None and src.is_work and cmd not in ANNOTATIONS:
            assert row.by is By.WORKER, (src, cmd)


def test_delivered_states_reopen_only_through_revise() -> None:
    """completed and revision_completed are left only by revise; closed and failed never (they
    take only a note, which keeps the state)."""
    for (src, cmd), row in TABLE.items():
        if src in DELIVERED_STATES and row.targets != {src}:
            assert cmd is Cmd.REVISE, (src, cmd)
        if src in FINAL_STATES:
            assert cmd in ANNOTATIONS and row.targets == {src}, (src, cmd)
    assert lookup(S.COMPLETED, Cmd.REVISE) is not None
    assert lookup(S.COMPLETED, Cmd.FINALIZE) is None  # finalize never writes


def test_only_discover_creates_an_item() -> None:
    """The one row from ``None`` is discovery, by the system, into observing."""
    rows = [row for (src, _), row in TABLE.items() if src is None]
    assert [(r.command, r.targets, r.by) for r in rows] == [
        (Cmd.DISCOVER, frozenset({S.OBSERVING}), By.SYSTEM)
    ]


def test_mermaid_has_every_edge_between_states() -> None:
    """The diagram shows each non-loop edge of the table once."""
    diagram = mermaid()
    for (src, cmd), row in TABLE.items():
        for target in row.targets - {src}:
            name = "[*]" if src is None else src.value
            assert f"    {name} --> {target.value}: {cmd.value}" in diagram
    assert "    observing --> observing" not in diagram


def test_docs_states_md_is_up_to_date() -> None:
    """``python -m stopline.core.docgen --check`` passes on the committed file."""
    assert docgen.DEFAULT_PATH.name == "states.md"
    assert docgen.DEFAULT_PATH.parent.name == "docs"
    done = subprocess.run(
        [sys.executable, "-m", "stopline.core.docgen", "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert docgen.DEFAULT_PATH.read_text(encoding="utf-8") == markdown()


def test_docgen_check_fails_on_a_stale_file(tmp_path: Path) -> None:
    """--check exits 1 on a differing or missing file and writes nothing; a write fixes it."""
    path = tmp_path / "states.md"
    assert docgen.main(["--check", "--path", str(path)]) == 1
    assert not path.exists()
    path.write_text(markdown().replace("awaiting_approval", "waiting"), encoding="utf-8")
    assert docgen.main(["--check", "--path", str(path)]) == 1
    assert "waiting" in path.read_text(encoding="utf-8")
    assert docgen.main(["--path", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == markdown()
    assert docgen.main(["--check", "--path", str(path)]) == 0


def test_markdown_lists_every_row() -> None:
    """Each (state, command) row appears in the generated table."""
    text = markdown()
    for (src, cmd), row in TABLE.items():
        name = "(new)" if src is None else f"`{src.value}`"
        assert f"| {name} | `{cmd.value}` |" in text
        assert f"| {row.by.value} | {row.doc} |" in text


def test_a_note_is_a_self_loop_in_every_state_by_a_participant() -> None:
    """note is legal in every state, final ones included, and never moves the item."""
    for state in S:
        row = lookup(state, Cmd.NOTE)
        assert row is not None and row.targets == {state} and row.by is By.PARTICIPANT
    assert {Cmd.NOTE} == ANNOTATIONS


def test_a_table_whose_note_moves_an_item_or_whose_final_state_acts_is_refused() -> None:
    """The validator allows a final state only annotations that keep it."""
    rows = dict(TABLE)
    rows[(S.CLOSED, Cmd.NOTE)] = Transition(
        S.CLOSED, Cmd.NOTE, frozenset({S.OBSERVING}), By.PARTICIPANT, "x"
    )
    with pytest.raises(TableError, match="note moves closed"):
        validate(rows)
    rows = dict(TABLE)
    rows[(S.FAILED, Cmd.CLOSE)] = Transition(
        S.FAILED, Cmd.CLOSE, frozenset({S.FAILED}), By.OPERATOR, "x"
    )
    with pytest.raises(TableError, match="final state failed accepts close"):
        validate(rows)
