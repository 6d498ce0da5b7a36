"""Item states and their classes (docs/states.md)."""

from __future__ import annotations

from enum import StrEnum


class StateClass(StrEnum):
    WORK = "work"
    STOP = "stop"
    TERMINAL = "terminal"


class State(StrEnum):
    OBSERVING = "observing"
    CLASSIFIED = "classified"
    APPROVED = "approved"
    DELIVERING = "delivering"
    PENDING_READBACK = "pending_readback"
    REVISION_PREPARED = "revision_prepared"

    AWAITING_APPROVAL = "awaiting_approval"
    READY_FOR_REVIEW = "ready_for_review"
    EXCEPTION = "exception"
    EXHAUSTED = "exhausted"
    REVISION_FAILED = "revision_failed"

    COMPLETED = "completed"
    REVISION_COMPLETED = "revision_completed"
    CLOSED = "closed"
    FAILED = "failed"

    @property
    def state_class(self) -> StateClass:
        return STATE_CLASS[self]

    @property
    def is_work(self) -> bool:
        return STATE_CLASS[self] is StateClass.WORK

    @property
    def is_stop(self) -> bool:
        return STATE_CLASS[self] is StateClass.STOP

    @property
    def is_terminal(self) -> bool:
        return STATE_CLASS[self] is StateClass.TERMINAL


STATE_CLASS: dict[State, StateClass] = {
    State.OBSERVING: StateClass.WORK,
    State.CLASSIFIED: StateClass.WORK,
    State.APPROVED: StateClass.WORK,
    State.DELIVERING: StateClass.WORK,
    State.PENDING_READBACK: StateClass.WORK,
    State.REVISION_PREPARED: StateClass.WORK,
    State.AWAITING_APPROVAL: StateClass.STOP,
    State.READY_FOR_REVIEW: StateClass.STOP,
    State.EXCEPTION: StateClass.STOP,
    State.EXHAUSTED: StateClass.STOP,
    State.REVISION_FAILED: StateClass.STOP,
    State.COMPLETED: StateClass.TERMINAL,
    State.REVISION_COMPLETED: StateClass.TERMINAL,
    State.CLOSED: StateClass.TERMINAL,
    State.FAILED: StateClass.TERMINAL,
}

WORK_STATES = frozenset(s for s in State if s.is_work)
STOP_STATES = frozenset(s for s in State if s.is_stop)
TERMINAL_STATES = frozenset(s for s in State if s.is_terminal)
# Terminal states that no command may ever leave.
FINAL_STATES = frozenset({State.CLOSED, State.FAILED})
# States a completed delivery may be in: reopened only through ``revise``.
DELIVERED_STATES = frozenset({State.COMPLETED, State.REVISION_COMPLETED})
