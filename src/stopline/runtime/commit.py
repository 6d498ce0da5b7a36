"""The one way a decision reaches the store.

The command layer (``Controller.run``), a worker's steps, the sweeper and the scheduler all
decide with ``decide()`` and then call :func:`commit`, which says what happened:

* ``applied``: the new item and its one event were written in one transaction;
* ``zero_write``: nothing to write, and that is the correct outcome;
* ``refused``: nothing was written but one audit row (``store.record_refusal``);
* ``lost``: another write came first (the compare-and-set on the item's version failed, or the
  key was discovered already); nothing was written, and the caller decides what that means;
* ``cut_off``: the database went away mid-commit and a read-back showed that nothing was
  written (only a writer that reads back, such as a worker's, answers this).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from ..core.decision import Decision, Outcome
from ..store import Store

log = logging.getLogger("stopline.worker")

REREAD_FOR = 120.0  # seconds a worker keeps trying to read back a commit cut off midway


class Committed(StrEnum):
    APPLIED = "applied"
    ZERO_WRITE = "zero_write"
    REFUSED = "refused"
    LOST = "lost"
    CUT_OFF = "cut_off"


@dataclass(frozen=True)
class Commit:
    status: Committed
    decision: Decision


# Writes an applied decision: True (written), False (another write came first), None (cut off
# before a commit that wrote nothing).
Writer = Callable[[Decision], bool | None]


def commit(
    store: Store,
    decision: Decision,
    *,
    command: str,
    actor: str | None,
    now: datetime,
    write: Writer | None = None,
) -> Commit:
    """Write ``decision`` (an audit row for a refusal) and say what happened. ``write`` replaces
    the store's own write (a new item is inserted, any other decision applied)."""
    if decision.outcome is Outcome.REFUSED:
        store.record_refusal(decision, command, actor, now)
        return Commit(Committed.REFUSED, decision)
    if decision.outcome is Outcome.ZERO_WRITE:
        return Commit(Committed.ZERO_WRITE, decision)
    if write is None:
        written: bool | None = (
            store.insert(decision) if decision.before is None else store.apply(decision)
        )
    else:
        written = write(decision)
    if written is None:
        return Commit(Committed.CUT_OFF, decision)
    return Commit(Committed.APPLIED if written else Committed.LOST, decision)


def reading_back(
    store: Store,
    write: Callable[[Decision], bool],
    unavailable: tuple[type[BaseException], ...],
    decision: Decision,
) -> bool | None:
    """``write(decision)`` (the store's apply, or a group's). If the database goes away before
    the outcome of the commit is known, read the item back once it answers again: ``True``
    when this decision's event is its head (the commit went through), ``None`` when the item
    is as it was (nothing was written), ``False`` when another write came first."""
    try:
        return write(decision)
    except unavailable as exc:
        log.warning("database lost committing %s (%s); reading it back", decision.item_id, exc)
    assert decision.before is not None and decision.event is not None
    deadline = time.monotonic() + REREAD_FOR
    while True:
        try:
            fresh = store.get(decision.before.id)
            break
        except unavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    if fresh is not None and fresh.head == decision.event.hash:
        return True
    if fresh is not None and fresh.version == decision.before.version:
        return None
    return False


def log_decision(command: str, item_id: str, status: str, decision: Decision) -> None:
    """One line per decision a worker committed (``decision``: applied, refused, ...)."""
    state = None if decision.state is None else decision.state.value
    why = ", ".join(decision.reasons) or state or "-"
    log.info(
        "%s %s on %s: %s", command, status, item_id, why, extra={"decision": status, "state": state}
    )
