"""The agent desk: what an agent's commands do (``commands/agent_table.py``), over one store.

An agent is an actor holding the ``agent`` role. It plays the part a worker plays for a
Python automation, on the items it started itself and on nothing else: it records evidence and
a proposal (``observe``, ``propose``), a report or a stop for a person, and, once a person has
approved, takes the acting step (``execute``, authority checked again) and records what came of
it (``delivered`` and ``readback``, or a failure). Every write is ``decide()`` and the one
commit path, under a lease the agent takes on the item: the attempt is counted when the agent
takes a step, as when a worker claims one, so retry budgets, exhaustion and the sweeper apply
to agent items unchanged. Nothing here approves, rejects, edits, resumes or closes anything.

Every operation answers an :class:`Answer`; a refusal is a value with reason codes, and writes
nothing but the audit row of a refused decision.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from ..clock import Clock, utcnow
from ..core.canonical import CanonicalError
from ..core.commands import (
    Command,
    Delivered,
    Discover,
    Execute,
    Failure,
    Guard,
    NeedsEyes,
    Observe,
    Propose,
    ReadBack,
    Report,
)
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
from ..runtime.scheduler import new_item_id
from ..store import Store
from ..trust.authority import Authority, Trust
from ..trust.checks import signature_findings
from .answers import (
    AgentError,
    Answer,
    agent_view,
    decision_status,
    digest_of,
    refusal,
    same_proposal,
)

AGENT_FAILURE = "agent_reported"  # the failure class of an outcome an agent reports as failed
# what the core's guard writes when a check before a step fails: never what the agent asked
CHECKS_FAILED = frozenset({Cmd.INTEGRITY_FAILED.value, Cmd.RECHECK_FAILED.value})
POLL = 0.5  # seconds between two reads of a waited-on item


class AgentDesk:
    """The agent commands of one agent (``agent``, an actor holding the agent role)."""

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

    def actors(self, now: datetime) -> dict[str, Actor]:
        registry = self.store.registry()
        if self.trust is None:
            return dict(registry.actors)
        return Authority.build(self.trust, registry.signed).actors(now)

    def check_identity(self) -> None:
        """Raise :class:`AgentError` unless the agent is an active actor holding ``agent``."""
        known = self.actors(self.clock()).get(self.agent)
        if known is None or not known.active:
            raise AgentError(f"{self.agent!r} is not an active actor in the registry")
        if AGENT not in known.roles:
            raise AgentError(f"{self.agent!r} does not hold the {AGENT} role")

    def _identity_reasons(self) -> list[str]:
        try:
            self.check_identity()
        except AgentError:
            return [Reason.ACTOR_NOT_AUTHORIZED]
        return []

    # --- reading ------------------------------------------------------------------------------

    def _own(self, ref: str) -> tuple[Item | None, Answer | None]:
        item = self.store.get(ref)
        if item is None and "/" in ref:
            automation, _, key = ref.partition("/")
            item = self.store.find(automation, key)
        if item is None:
            return None, refusal([Reason.UNKNOWN_ITEM], item=ref)
        if item.doc("agent") != self.agent:
            return None, refusal([Reason.NOT_YOUR_ITEM], item=ref)
        return item, None

    def get(self, item: str) -> Answer:
        found, problem = self._own(item)
        if problem is not None:
            return problem
        assert found is not None
        return Answer(True, agent_view(found))

    def list(self, automation: str | None = None, state: str | None = None) -> Answer:
        if state is not None and state not in {s.value for s in State}:
            return refusal([Reason.INVALID_INPUT], f"no state is called {state!r}")
        items = self.store.list_items(automation=automation, state=state, limit=1000)
        mine = [agent_view(i) for i in items if i.doc("agent") == self.agent]
        return Answer(True, {"items": mine})

    def wait(self, item: str, digest: str | None = None, timeout: int = 30) -> Answer:
        """Wait for a person's decision: ``approved``, ``rejected``, ``changed`` or
        ``waiting`` (or the item's state when it is elsewhere); at most ``timeout`` s."""
        deadline = time.monotonic() + max(0, timeout)
        while True:
            found, problem = self._own(item)
            if problem is not None:
                return problem
            assert found is not None
            status = decision_status(found, digest)
            if status != "waiting" or time.monotonic() >= deadline:
                return Answer(True, {"status": status, **agent_view(found)})
            self.sleep(min(POLL, max(deadline - time.monotonic(), 0.0)))

    # --- writing: proposals, reports, stops ------------------------------------------------------

    def _start(self, automation: str, key: str) -> tuple[Item | None, Policy | None, Answer | None]:
        """The agent's item for ``automation``/``key``, discovered for it when new."""
        if reasons := self._identity_reasons():
            return None, None, refusal(reasons, f"{self.agent} does not hold the agent role")
        policy = self.store.policy(automation)
        if policy is None:
            return None, None, refusal([Reason.UNKNOWN_AUTOMATION], automation=automation)
        if not policy.agent:
            return None, None, refusal([Reason.NOT_AN_AGENT_AUTOMATION], automation=automation)
        item = self.store.find(automation, key)
        if item is not None:
            if item.doc("agent") != self.agent:
                return None, None, refusal([Reason.NOT_YOUR_ITEM], item=f"{automation}/{key}")
            return item, policy, None
        now = self.clock()
        command = Discover(item_id=new_item_id(), automation=automation, key=key, agent=self.agent)
        decision = decide(None, command, Context(now, policy))
        done = commit(self.store, decision, command=command.name, actor=self.agent, now=now)
        if done.status is Committed.LOST:  # the key was started meanwhile: read it again
            return self._start(automation, key)
        if not decision.applied:
            return None, None, refusal(list(decision.reasons))
        return decision.after, policy, None

    def _observe(self, item: Item, policy: Policy, evidence: Mapping[str, Any]) -> Decision:
        now = self.clock()
        data = dict(evidence)
        return self._step(
            item, policy, lambda t: Observe(self.agent, t, evidence=data, observed_at=now)
        )

    def propose(
        self,
        automation: str,
        key: str,
        action: str,
        target: str,
        params: Mapping[str, Any],
        evidence: Mapping[str, Any],
        rationale: str = "",
    ) -> Answer:
        item, policy, problem = self._start(automation, key)
        if problem is not None:
            return problem
        assert item is not None and policy is not None
        proposal = item.doc("proposal")
        wanted = {"action": action, "target": target, "params": params, "rationale": rationale}
        if proposal is not None and same_proposal(proposal, wanted):
            return Answer(True, {"written": False, **agent_view(item)})  # a replay
        if item.state is State.OBSERVING:
            decision = self._observe(item, policy, evidence)
            if not decision.applied:
                return self._refused(decision)
            assert decision.after is not None
            item = decision.after
        if item.state is not State.CLASSIFIED:
            return refusal(
                [Reason.ILLEGAL_TRANSITION],
                f"the item is {item.state.value}: a proposal is made on a new key, or on an item"
                " a person sent back or asked to inspect again",
                **agent_view(item),
            )
        wanted_params = dict(params)

        def command(token: int) -> Command:
            return Propose(
                self.agent,
                token,
                action=action,
                target=target,
                params=wanted_params,
                rationale=rationale,
                proposer=self.agent,
            )

        decision = self._step(item, policy, command)
        return self._answer(decision, State.AWAITING_APPROVAL, State.APPROVED)

    def report(
        self, automation: str, key: str, report: Mapping[str, Any], evidence: Mapping[str, Any]
    ) -> Answer:
        item, policy, problem = self._start(automation, key)
        if problem is not None:
            return problem
        assert item is not None and policy is not None
        if item.state is State.READY_FOR_REVIEW and item.doc("report")["digest"] == digest_of(
            report
        ):
            return Answer(True, {"written": False, **agent_view(item)})
        if item.state is State.OBSERVING:
            decision = self._observe(item, policy, evidence)
            if not decision.applied:
                return self._refused(decision)
            assert decision.after is not None
            item = decision.after
        body = dict(report)
        decision = self._step(item, policy, lambda t: Report(self.agent, t, report=body))
        return self._answer(decision, State.READY_FOR_REVIEW)

    def needs_eyes(
        self,
        automation: str,
        key: str,
        why: str,
        owner: str,
        evidence: Mapping[str, Any] | None = None,
    ) -> Answer:
        item, policy, problem = self._start(automation, key)
        if problem is not None:
            return problem
        assert item is not None and policy is not None
        stopped = item.doc("exception")
        if item.state is State.EXCEPTION and stopped and stopped.get("why") == why:
            return Answer(True, {"written": False, **agent_view(item)})
        data = dict(evidence or {})

        def command(token: int) -> Command:
            return NeedsEyes(self.agent, token, owner=owner, why=why, evidence=data)

        return self._answer(self._step(item, policy, command), State.EXCEPTION)

    # --- writing: the approved action ---------------------------------------------------------

    def begin(self, item: str, digest: str) -> Answer:
        """Take the acting step of an approved proposal: the record, the registry and every
        approval are checked again (as a worker does before it acts); ``delivering`` on
        success, held by this agent."""
        if reasons := self._identity_reasons():
            return refusal(reasons)
        found, problem = self._own(item)
        if problem is not None:
            return problem
        assert found is not None
        policy = self.store.policy(found.automation)
        if policy is None:
            return refusal([Reason.UNKNOWN_AUTOMATION])
        mine = found.lease_owner == self.agent and found.lease_live(self.clock())
        if found.state is State.DELIVERING and mine:  # begun already, and still held: a replay
            return Answer(True, {"written": False, **agent_view(found)})
        current = (found.doc("proposal") or {}).get("digest")
        if current != digest:
            return refusal([Reason.PROPOSAL_DIGEST_MISMATCH], **agent_view(found))
        if found.state is not State.APPROVED:
            return refusal([Reason.ILLEGAL_TRANSITION], **agent_view(found))
        claimed, problem = self._claim(found, policy)
        if problem is not None:
            return problem
        assert claimed is not None
        checked = self._guard(claimed, policy)
        if checked.outcome is not Outcome.ZERO_WRITE:
            return self._answer(checked, State.DELIVERING)
        now = self.clock()
        execute = Execute(self.agent, claimed.lease_token, digest=digest)
        decision = decide(claimed, execute, Context(now, policy, self.actors(now)))
        if decision.applied and decision.state is State.DELIVERING:
            assert decision.after is not None
            held = self._take(decision.after, policy, now)
            decision = replace(decision, after=held)
        return self._answer(self._commit(decision, execute), State.DELIVERING)

    def record(
        self,
        item: str,
        digest: str,
        status: str,
        result: Mapping[str, Any] | None = None,
        message: str = "",
        retryable: bool | None = None,
    ) -> Answer:
        """Record the outcome of the approved action this agent took (``begin``)."""
        if reasons := self._identity_reasons():
            return refusal(reasons)
        found, problem = self._own(item)
        if problem is not None:
            return problem
        assert found is not None
        policy = self.store.policy(found.automation)
        if policy is None:
            return refusal([Reason.UNKNOWN_AUTOMATION])
        current = (found.doc("proposal") or {}).get("digest")
        if current != digest:
            return refusal([Reason.PROPOSAL_DIGEST_MISMATCH], **agent_view(found))
        result = dict(result or {})
        if found.state is State.COMPLETED:
            same = status == "done" and found.doc("result") == result
            if same:
                return Answer(True, {"written": False, **agent_view(found)})
            return refusal([Reason.ALREADY_COMPLETED], **agent_view(found))
        if found.state is State.APPROVED:
            return refusal(
                [Reason.ILLEGAL_TRANSITION],
                "take the step with begin_action before acting, then record its outcome",
                **agent_view(found),
            )
        if found.state not in (State.DELIVERING, State.PENDING_READBACK):
            return refusal([Reason.ILLEGAL_TRANSITION], **agent_view(found))
        if status == "failed":

            def failure(token: int) -> Command:
                return Failure(
                    self.agent,
                    token,
                    failure_class=AGENT_FAILURE,
                    message=message,
                    retryable=retryable,
                )

            return self._answer(self._step(found, policy, failure))
        if found.state is State.DELIVERING:
            decision = self._step(
                found, policy, lambda t: Delivered(self.agent, t, result=result, digest=digest)
            )
            if not decision.applied or decision.after is None:
                return self._refused(decision)
            found = decision.after
        decision = self._step(found, policy, lambda t: ReadBack(self.agent, t, readbacks={}))
        return self._answer(decision, State.COMPLETED)

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
        head, legacy = self.store.head(claimed.id)
        guard = Guard(
            self.agent, claimed.lease_token, head=head, legacy_seal=legacy, authority=False
        )
        now = self.clock()
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
