"""The transition table: the one place where legal moves are defined.

Each row says which command may move an item from one state to which states, and who issues
that command. ``decide()`` looks a (state, command) pair up here first; a pair that is not in
the table is refused ``illegal_transition``. The table is validated when this module is
imported (every state reachable, no exit from a final state, every live state can still end),
and ``docs/states.md`` is generated from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from .states import (
    DELIVERED_STATES,
    FINAL_STATES,
    STOP_STATES,
    TERMINAL_STATES,
    WORK_STATES,
    State,
)


class By(StrEnum):
    """Who may issue a command."""

    WORKER = "worker"  # a worker holding the item's live lease
    OPERATOR = "operator"  # a known actor with the operator role
    APPROVER = "approver"  # a known actor holding a role the approval policy requires
    REVIEWER = "reviewer"  # a known actor with the operator role, bound to a review packet
    # a known actor holding a role that gives some right on the item's automation
    PARTICIPANT = "participant"
    SYSTEM = "system"  # the scheduler (discovery) or the lease sweeper


class Cmd(StrEnum):
    DISCOVER = "discover"
    OBSERVE = "observe"
    PROPOSE = "propose"
    REPORT = "report"
    NOTHING_TO_DO = "nothing_to_do"
    NEEDS_EYES = "needs_eyes"
    RETRY = "retry"
    EXHAUST = "exhaust"
    FAIL = "fail"
    EXECUTE = "execute"
    RECHECK_FAILED = "recheck_failed"
    INTEGRITY_FAILED = "integrity_failed"
    STAGE = "stage"
    INTENT = "intent"
    BIND = "bind"
    DELIVERED = "delivered"
    READBACK = "readback"
    REVISION_FAIL = "revision_fail"

    APPROVE = "approve"
    REJECT = "reject"
    EDIT = "edit"
    REINSPECT = "reinspect"
    ACKNOWLEDGE = "acknowledge"
    RESOLVE = "resolve"
    RESUME = "resume"
    CLOSE = "close"
    FINALIZE = "finalize"
    REVISE = "revise"
    REVIEW = "review"
    PUBLISH = "publish"
    RECONCILE = "reconcile"
    NOTE = "note"


# Commands that add to an item's history and never move it: a row of theirs is a self-loop,
# and they are the only rows a final state has.
ANNOTATIONS = frozenset({Cmd.NOTE})


@dataclass(frozen=True)
class Transition:
    source: State | None  # None: the item does not exist yet
    command: Cmd
    targets: frozenset[State]
    by: By
    doc: str


_DELIVERY_WORK = (
    State.OBSERVING,
    State.CLASSIFIED,
    State.APPROVED,
    State.DELIVERING,
    State.PENDING_READBACK,
)


def _rows() -> Iterable[Transition]:
    def row(src: State | None, cmd: Cmd, targets: Iterable[State], by: By, doc: str) -> Transition:
        return Transition(src, cmd, frozenset(targets), by, doc)

    yield row(None, Cmd.DISCOVER, [State.OBSERVING], By.SYSTEM, "a newly discovered key")
    yield row(State.OBSERVING, Cmd.OBSERVE, [State.CLASSIFIED], By.WORKER, "evidence gathered")
    yield row(
        State.CLASSIFIED,
        Cmd.PROPOSE,
        [State.AWAITING_APPROVAL, State.APPROVED],
        By.WORKER,
        "a proposal; approved at once only when its policy requires no approval",
    )
    yield row(State.CLASSIFIED, Cmd.REPORT, [State.READY_FOR_REVIEW], By.WORKER, "a result to read")
    yield row(
        State.CLASSIFIED,
        Cmd.NOTHING_TO_DO,
        [State.COMPLETED],
        By.WORKER,
        "the evidence shows nothing to act on: completed with it, no approval, no delivery",
    )
    for src in _DELIVERY_WORK:
        yield row(src, Cmd.NEEDS_EYES, [State.EXCEPTION], By.WORKER, "the automation cannot decide")
        yield row(src, Cmd.RETRY, [src], By.WORKER, "retryable failure, next attempt scheduled")
        yield row(src, Cmd.EXHAUST, [State.EXHAUSTED], By.WORKER, "retry budget spent")
        yield row(src, Cmd.FAIL, [State.FAILED], By.WORKER, "terminal failure with its evidence")
    yield row(State.APPROVED, Cmd.EXECUTE, [State.DELIVERING], By.WORKER, "authority re-checked")
    for src in (State.APPROVED, State.DELIVERING):
        yield row(
            src,
            Cmd.RECHECK_FAILED,
            [State.AWAITING_APPROVAL],
            By.WORKER,
            "authority or freshness no longer holds before an acting call",
        )
    for src in sorted(WORK_STATES):
        yield row(
            src,
            Cmd.INTEGRITY_FAILED,
            [State.EXCEPTION],
            By.WORKER,
            "the stored record no longer matches what its history sealed",
        )
    for src in (State.DELIVERING, State.REVISION_PREPARED):
        yield row(src, Cmd.STAGE, [src], By.WORKER, "artifacts rendered and QA evidence bound")
        yield row(src, Cmd.INTENT, [src], By.WORKER, "intent recorded before a remote call")
        yield row(src, Cmd.BIND, [src], By.WORKER, "remote identity recorded after the call")
    yield row(
        State.DELIVERING, Cmd.DELIVERED, [State.PENDING_READBACK], By.WORKER, "all calls made"
    )
    yield row(
        State.PENDING_READBACK, Cmd.READBACK, [State.COMPLETED], By.WORKER, "every object read back"
    )
    yield row(
        State.REVISION_PREPARED,
        Cmd.READBACK,
        [State.REVISION_COMPLETED],
        By.WORKER,
        "revision completion gate passed",
    )
    yield row(
        State.REVISION_PREPARED,
        Cmd.REVISION_FAIL,
        [State.REVISION_FAILED],
        By.WORKER,
        "failed delivery, failed gate or expired lease",
    )

    yield row(
        State.AWAITING_APPROVAL,
        Cmd.APPROVE,
        [State.AWAITING_APPROVAL, State.APPROVED],
        By.APPROVER,
        "an approval of the current digest; approved once enough distinct approvers",
    )
    yield row(
        State.AWAITING_APPROVAL,
        Cmd.REJECT,
        [State.CLOSED, State.CLASSIFIED],
        By.APPROVER,
        "closed without action, or returned to be proposed again",
    )
    yield row(
        State.AWAITING_APPROVAL, Cmd.EDIT, [State.AWAITING_APPROVAL], By.OPERATOR, "new digest"
    )
    for src in (State.AWAITING_APPROVAL, State.READY_FOR_REVIEW, State.EXCEPTION):
        yield row(src, Cmd.REINSPECT, [State.OBSERVING], By.OPERATOR, "gather fresh evidence")
    yield row(
        State.READY_FOR_REVIEW, Cmd.ACKNOWLEDGE, [State.CLOSED], By.OPERATOR, "read and closed"
    )
    yield row(
        State.EXCEPTION, Cmd.RESOLVE, [State.OBSERVING], By.OPERATOR, "corrective input given"
    )
    yield row(
        State.EXHAUSTED, Cmd.RESUME, _DELIVERY_WORK, By.OPERATOR, "a new, recorded retry budget"
    )
    for src in sorted(STOP_STATES):
        yield row(src, Cmd.CLOSE, [State.CLOSED], By.OPERATOR, "closed by an operator")
    for src in sorted(DELIVERED_STATES):
        yield row(src, Cmd.REVISE, [State.REVISION_PREPARED], By.OPERATOR, "open a revision")
        yield row(src, Cmd.REVIEW, [src], By.REVIEWER, "a verdict on the review packet")
        yield row(src, Cmd.PUBLISH, [src], By.APPROVER, "publication signal recorded")
    yield row(
        State.REVISION_FAILED,
        Cmd.REVISE,
        [State.REVISION_PREPARED],
        By.OPERATOR,
        "resume the same revision request",
    )
    yield row(
        State.REVISION_FAILED,
        Cmd.RECONCILE,
        [State.REVISION_FAILED],
        By.OPERATOR,
        "a found remote object verified by readback and bound; never creates",
    )
    yield row(
        State.EXCEPTION,
        Cmd.RECONCILE,
        [State.EXCEPTION],
        By.OPERATOR,
        "a found remote object verified by readback and bound; never creates",
    )
    for src in State:
        yield row(src, Cmd.NOTE, [src], By.PARTICIPANT, "a comment in the history; nothing moves")


class TableError(Exception):
    """The transition table is malformed (raised at import time)."""


TABLE: Mapping[tuple[State | None, Cmd], Transition] = {}


def _build(rows: Iterable[Transition]) -> dict[tuple[State | None, Cmd], Transition]:
    table: dict[tuple[State | None, Cmd], Transition] = {}
    for t in rows:
        if (t.source, t.command) in table:
            raise TableError(f"duplicate row {t.source} --{t.command}-->")
        table[(t.source, t.command)] = t
    return table


def validate(table: Mapping[tuple[State | None, Cmd], Transition]) -> None:
    """Refuse a table with unreachable states, exits from final states, or dead ends."""
    problems: list[str] = []
    reachable: set[State] = set()
    frontier: list[State | None] = [None]
    while frontier:
        src = frontier.pop()
        for (s, _), t in table.items():
            if s == src:
                for target in t.targets - reachable:
                    reachable.add(target)
                    frontier.append(target)
    problems += [f"unreachable state {s}" for s in State if s not in reachable]
    for (src, cmd), t in table.items():
        if cmd in ANNOTATIONS and t.targets != {src}:
            problems.append(f"{cmd} moves {src}: an annotation keeps the state")
        if src in FINAL_STATES and t.targets != {src}:
            problems.append(f"final state {src} has an exit by {cmd}")
        if src in FINAL_STATES and cmd not in ANNOTATIONS:
            problems.append(f"final state {src} accepts {cmd}")
    can_end: set[State] = set(TERMINAL_STATES)
    changed = True
    while changed:
        changed = False
        for (src, _), t in table.items():
            if src is not None and src not in can_end and t.targets & can_end:
                can_end.add(src)
                changed = True
    problems += [f"state {s} can never reach a terminal state" for s in State if s not in can_end]
    for (src, _), t in table.items():
        if src is not None and src.is_stop and t.by in (By.WORKER, By.SYSTEM):
            problems.append(f"stop state {src} left by {t.by} via {t.command}")
    if problems:
        raise TableError("; ".join(problems))


TABLE = _build(_rows())
validate(TABLE)


def lookup(source: State | None, command: Cmd) -> Transition | None:
    return TABLE.get((source, command))


def commands_from(source: State) -> list[Cmd]:
    return [cmd for (s, cmd) in TABLE if s == source]


def mermaid() -> str:
    """A Mermaid state diagram of the table (self-loops left out for legibility)."""
    lines = ["stateDiagram-v2"]
    seen: set[tuple[str, str, str]] = set()
    for (src, cmd), t in TABLE.items():
        for target in sorted(t.targets):
            if target == src:
                continue
            edge = ("[*]" if src is None else src.value, target.value, cmd.value)
            if edge not in seen:
                seen.add(edge)
                lines.append(f"    {edge[0]} --> {edge[1]}: {edge[2]}")
    for s in sorted(TERMINAL_STATES):
        lines.append(f"    {s.value} --> [*]")
    return "\n".join(lines)


def markdown() -> str:
    """The body of ``docs/states.md``."""
    from .states import State as _S

    out = [
        "# Item states and transitions",
        "",
        "Generated from `stopline.core.transitions.TABLE` by `python -m stopline.core.docgen`;"
        " do not edit by hand. A test fails when this file and the table disagree.",
        "",
        "| state | class |",
        "| --- | --- |",
    ]
    out += [f"| `{s.value}` | {s.state_class.value} |" for s in _S]
    out += ["", "## Transitions", "", "| from | command | to | by | meaning |"]
    out += ["| --- | --- | --- | --- | --- |"]
    for (src, cmd), t in TABLE.items():
        targets = ", ".join(f"`{x.value}`" for x in sorted(t.targets))
        name = "(new)" if src is None else f"`{src.value}`"
        out.append(f"| {name} | `{cmd.value}` | {targets} | {t.by.value} | {t.doc} |")
    out += ["", "## Diagram", "", "```mermaid", mermaid(), "```", ""]
    return "\n".join(out)
