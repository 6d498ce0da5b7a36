"""What every shell does with a checked command: resolve digest prefixes against the item,
run it, and explain a refusal (:mod:`stopline.core.explain`).

A person may type a digest by a prefix of at least 12 characters when it names exactly one
digest the item holds (its current proposal, the one an edit replaced, its review packet). A
shorter or ambiguous prefix is malformed input (exit 2, HTTP 422), and nothing is run. A prefix
of the proposal an edit replaced resolves to that proposal, so the refusal shows what changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..controller import IDEMPOTENT_REPLAY, Controller
from ..core.commands import Command
from ..core.decision import Decision, Outcome
from ..core.explain import Case, Explanation, explain
from ..core.proposal_diff import MIN_PREFIX
from ..core.records import Item
from ..core.step import Context
from . import sources
from .entry import Entry, execute
from .fields import Field, Type
from .runners import RunOptions

FULL_DIGEST = 64


def _candidates(f: Field, item: Item) -> list[str]:
    assert f.bound is not None
    found = [f.bound(item)]
    if f.bound is sources.proposal_digest:
        previous = item.doc("previous_proposal")
        if previous is not None:
            found.append(previous["digest"])
    return [str(d) for d in dict.fromkeys(found) if d]


def resolve_digests(
    entry: Entry, item: Item | None, fields: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """``fields`` with every digest prefix replaced by the digest it names, and every problem
    (a prefix shorter than :data:`~stopline.core.proposal_diff.MIN_PREFIX`, or an ambiguous one)."""
    out = dict(fields)
    problems: list[str] = []
    for f in entry.fields:
        value = out.get(f.name)
        if f.bound is None or f.type is not Type.TEXT or not isinstance(value, str):
            continue
        if len(value) >= FULL_DIGEST or item is None:
            continue
        if len(value) < MIN_PREFIX:
            problems.append(
                f"{f.name}: {value!r} is too short; give the whole digest or at least"
                f" {MIN_PREFIX} of its first characters (`stopline show` prints it)"
            )
            continue
        found = [d for d in _candidates(f, item) if d.startswith(value)]
        if len(found) > 1:
            problems.append(
                f"{f.name}: the prefix {value!r} matches {len(found)} digests of this item;"
                " give more characters"
            )
        elif found:
            out[f.name] = found[0]
    return out, problems


def explanation_of(
    controller: Controller, decision: Decision, command: Command, ref: str
) -> Explanation:
    """The explanation of a refusal or a zero-write decision (empty for an applied one)."""
    if decision.outcome is Outcome.APPLIED or IDEMPOTENT_REPLAY in decision.reasons:
        return Explanation(())
    item = decision.before or controller.item(ref)
    store = controller.store
    policy = store.policy(item.automation) if item is not None else None
    proposals = []
    if item is not None:
        proposals = [p for p in (item.doc("proposal"), item.doc("previous_proposal")) if p]
    ctx = Context(controller.clock(), policy, controller.deciding_actors())
    decided = decision.decided or command
    found = explain(Case(item, decided, decision.reasons, ctx, ref, proposals))
    if decision.explanation:  # what the command layer found (signature, integrity): first
        return Explanation((*decision.explanation, *found.sentences), found.details)
    return found


@dataclass(frozen=True)
class Performed:
    """A command run by a shell: its decision and explanation, or the problems that stopped it
    before it ran."""

    decision: Decision | None
    explanation: Explanation = field(default_factory=lambda: Explanation(()))
    problems: tuple[str, ...] = ()

    def to_plain(self) -> dict[str, Any]:
        """The decision JSON, with ``explanation`` and ``details`` added."""
        assert self.decision is not None
        return {**self.decision.to_plain(), **self.explanation.to_plain()}


def perform(
    controller: Controller,
    entry: Entry,
    ref: str,
    *,
    actor: str | None,
    fields: Mapping[str, Any],
    options: RunOptions | None = None,
) -> Performed:
    """Resolve digest prefixes, run ``entry`` on item ``ref`` and explain the outcome."""
    if entry.takes_actor and (not isinstance(actor, str) or not actor.strip()):
        return Performed(None, problems=(f"{entry.name} needs an actor: nobody was named",))
    item = controller.item(ref) if any(f.bound for f in entry.fields) else None
    resolved, problems = resolve_digests(entry, item, fields)
    if problems:
        return Performed(None, problems=tuple(problems))
    decision = execute(controller, entry, ref, actor=actor, fields=resolved, options=options)
    command = entry.build(actor, resolved)
    return Performed(decision, explanation_of(controller, decision, command, ref))
