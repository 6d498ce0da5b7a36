"""The steps an agent takes on its own items: a lease taken on the item (the attempt counted,
a new fencing token, as a worker's claim), the core's guard before a step (and, before the
acting step, the whole history against the ledger, the registry and the signatures), one
``decide()`` and the one commit path; and what the answer to the agent says of it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from ..clock import Clock, utcnow
from ..core.canonical import CanonicalError
from ..core.commands import Command, Guard
from ..core.decide import decide
from ..core.decision import Decision, Outcome, refused
from ..core.ledger import item_ledger_findings
from ..core.policy import Policy
from ..core.reasons import Reason
from ..core.records import Actor, Item
from ..core.states import State
from ..core.step import AGENT, Context
from ..core.transitions import Cmd
from ..core.verify import verify_item
from ..core.work import claimable
from ..runtime.commit import Committed, commit
from ..store import Store
from ..trust.authority import Authority, Trust
from ..trust.checks import signature_findings
from .answers import AgentError, Answer, agent_view, refusal

# what the core's guard writes when a check before a step fails: never what the agent asked
CHECKS_FAILED = frozenset({Cmd.INTEGRITY_FAILED.value, Cmd.RECHECK_FAILED.value})


class AgentSteps:
    """One agent (an actor holding the agent role) over one store."""

    def __init__(
        self,
        store: Store,
        agent: str,
        *,
        clock: Clock = utcnow,
        trust: Trust | None = None,
        host_trust: bool = True,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = store
        self.agent = agent
        self.clock = clock
        self.trust = trust if trust is not None or not host_trust else Trust.from_env()
        self.sleep = sleep

    # --- who the agent is ---------------------------------------------------------------------

    def actors(self, now: datetime, *, sound: bool = False) -> dict[str, Actor]:
        """The registry's actors (in signed mode the certified ones); with ``sound``, none
        while the registry chain does not hold, as an HTTP request is refused then."""
        registry = self.store.registry()
        if sound and not registry.ok:
            return {}
        if self.trust is None:
            return dict(registry.actors)
        return Authority.build(self.trust, registry.signed).actors(now)

    def check_identity(self, *, sound: bool = False) -> None:
        """Raise :class:`AgentError` unless the agent is an active actor holding ``agent``;
        with ``sound``, nobody is while the registry chain does not hold (a write checks the
        chain itself, and records what it finds as an incident)."""
        known = self.actors(self.clock(), sound=sound).get(self.agent)
        if known is None or not known.active:
            raise AgentError(
                f"{self.agent!r} is not an active actor in the registry: an agent is an actor"
                f" holding the {AGENT} role (stopline actors add NAME --role {AGENT})"
            )
        if AGENT not in known.roles:
            raise AgentError(f"{self.agent!r} does not hold the {AGENT} role")

    def _identity_reasons(self) -> list[str]:
        try:
            self.check_identity()
        except AgentError:
            return [Reason.ACTOR_NOT_AUTHORIZED]
        return []

    # --- the parts every write shares ---------------------------------------------------------

    def _claim(self, item: Item, policy: Policy) -> tuple[Item | None, Answer | None]:
        """The item with this agent's lease: the one it holds, or a new claim (the attempt
        counted, a new fencing token) when the step is claimable now."""
        now = self.clock()
        if not item.state.is_work:
            return None, refusal([Reason.ILLEGAL_TRANSITION], **agent_view(item))
        if item.lease_owner == self.agent and item.lease_live(now):
            return item, None
        if claimable(item, now):
            return self._take(item, policy, now), None
        if item.lease_live(now):
            return None, refusal([Reason.LEASE_HELD], **agent_view(item))
        if item.attempts >= item.max_attempts:
            return None, refusal([Reason.RETRY_BUDGET_EXHAUSTED], **agent_view(item))
        return None, refusal([Reason.NOT_DUE], **agent_view(item))

    def _take(self, item: Item, policy: Policy, now: datetime) -> Item:
        return replace(
            item,
            attempts=item.attempts + 1,
            lease_token=item.lease_token + 1,
            lease_owner=self.agent,
            lease_expires_at=now + timedelta(seconds=policy.lease_seconds),
            claimed_at=now,
        )

    def _step(self, item: Item, policy: Policy, build: Callable[[int], Command]) -> Decision:
        """Decide and commit the command ``build`` makes for the fencing token of this agent's
        lease on ``item``."""
        claimed, problem = self._claim(item, policy)
        if problem is not None:
            return refused(item, list(problem.reasons))
        assert claimed is not None
        now = self.clock()
        if claimed.state is State.DELIVERING and claimed.lease_token != item.lease_token:
            # a new attempt at an action begun before (a retry): authority checked again
            checked = self._guard(claimed, policy)
            if checked.outcome is not Outcome.ZERO_WRITE:
                return checked
        else:
            head, legacy = self.store.head(claimed.id)
            guard = Guard(
                self.agent, claimed.lease_token, head=head, legacy_seal=legacy, authority=False
            )
            checked = decide(claimed, guard, Context(now, policy))
            if checked.outcome is not Outcome.ZERO_WRITE:
                return self._commit(checked, guard)
        try:
            command = build(claimed.lease_token)
            decision = decide(claimed, command, Context(now, policy, self.actors(now)))
        except (CanonicalError, TypeError, ValueError):
            return refused(item, [Reason.INVALID_INPUT])
        return self._commit(decision, command)

    def _guard(self, item: Item, policy: Policy) -> Decision:
        """Before the agent acts: the whole history against the ledger, the registry and (in
        signed mode) the signatures, through the core's guard, as a worker checks."""
        now = self.clock()
        head, legacy = self.store.head(item.id)
        registry = self.store.registry()
        findings = list(registry.findings)
        history = self.store.history(item.id)
        findings += verify_item(item, history)
        findings += item_ledger_findings(item.id, history, self.store.item_ledger(item.id))
        actors = dict(registry.actors)
        if self.trust is not None:
            signed = Authority.build(self.trust, registry.signed)
            actors = signed.actors(now)
            findings += signature_findings(item, head, signed, now)
        guard = Guard(
            self.agent,
            item.lease_token,
            head=head,
            legacy_seal=legacy,
            registry=tuple(findings),
            authority=True,
        )
        decision = decide(item, guard, Context(now, policy, actors))
        return decision if decision.outcome is Outcome.ZERO_WRITE else self._commit(decision, guard)

    def _commit(self, decision: Decision, command: Command) -> Decision:
        done = commit(
            self.store, decision, command=command.name, actor=self.agent, now=self.clock()
        )
        if done.status is Committed.LOST:
            stale = refused(decision.before, [Reason.STALE_VERSION])
            commit(self.store, stale, command=command.name, actor=self.agent, now=self.clock())
            return stale
        return decision

    def _refused(self, decision: Decision) -> Answer:
        item = decision.before or (self.store.get(decision.item_id) if decision.item_id else None)
        view = agent_view(item) if item is not None else {}
        return refusal(list(decision.reasons), **view)

    def _answer(self, decision: Decision, *expected: State) -> Answer:
        """``ok`` when the decision was written (or needed no write) and the item is in one of
        ``expected`` (any state when none is named); otherwise a refusal with its reasons,
        saying whether something was written (a stop for a person, a failed re-check)."""
        if decision.outcome is Outcome.REFUSED:
            return self._refused(decision)
        item = decision.after or decision.before
        assert item is not None
        written = decision.outcome is Outcome.APPLIED
        view = {"written": written, **agent_view(item)}
        stopped = decision.event is not None and decision.event.command in CHECKS_FAILED
        if stopped or (expected and item.state not in expected):
            reasons = list(decision.reasons) or [Reason.ILLEGAL_TRANSITION]
            return refusal(reasons, **view)
        if written and decision.reasons:  # applied with reasons (a retry, an exhaustion)
            view["reasons"] = list(decision.reasons)
        return Answer(True, view)
