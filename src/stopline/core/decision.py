"""The value ``decide()`` returns: what should happen, never done by the core itself."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from .records import Event, Item
from .states import State

if TYPE_CHECKING:
    from .commands import Command


class Outcome(StrEnum):
    APPLIED = "applied"  # a transition: write ``after`` and ``event`` in one transaction
    ZERO_WRITE = "zero_write"  # nothing to write, and that is the correct outcome
    REFUSED = "refused"  # fail-closed: a rule does not hold, nothing is written


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    reasons: tuple[str, ...]
    item_id: str | None
    state: State | None
    before: Item | None = None
    after: Item | None = None
    event: Event | None = None
    # the specifics behind the reasons, in plain sentences (not part of the decision JSON)
    explanation: tuple[str, ...] = ()
    # the command as decided, when the command layer completed it with what its IO found (a
    # reconcile's lookup); the shell's own command otherwise
    decided: Command | None = None

    @property
    def applied(self) -> bool:
        return self.outcome is Outcome.APPLIED

    @property
    def sequence(self) -> int | None:
        return None if self.event is None else self.event.seq

    def to_plain(self) -> dict[str, Any]:
        """The decision JSON (docs/cli.md, "Refusals")."""
        return {
            "decision": self.outcome.value,
            "reasons": list(self.reasons),
            "item": self.item_id,
            "state": None if self.state is None else self.state.value,
            "sequence": self.sequence,
        }


def refused(item: Item | None, reasons: list[str], item_id: str | None = None) -> Decision:
    unique = tuple(dict.fromkeys(reasons))
    assert unique, "a refusal names at least one reason"
    return Decision(
        Outcome.REFUSED,
        unique,
        item.id if item else item_id,
        item.state if item else None,
        before=item,
    )


def zero_write(item: Item, reasons: list[str]) -> Decision:
    return Decision(Outcome.ZERO_WRITE, tuple(reasons), item.id, item.state, before=item)
