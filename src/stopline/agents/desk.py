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
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..controller import Controller
from ..core.authorship import Author, AuthorKind
from ..core.commands import (
    Command,
    Delivered,
    Discover,
    Execute,
    Failure,
    NeedsEyes,
    Observe,
    Propose,
    ReadBack,
    Report,
)
from ..core.decide import decide
from ..core.decision import Decision, Outcome
from ..core.integrity import head_findings
from ..core.policy import Policy
from ..core.reasons import Reason
from ..core.records import Item
from ..core.states import State
from ..core.step import Context
from ..runtime.commit import Committed, commit
from ..runtime.scheduler import new_item_id
from .answers import (
    Answer,
    agent_view,
    decision_status,
    digest_of,
    refusal,
    same_proposal,
)
from .steps import AgentSteps

AGENT_FAILURE = "agent_reported"  # the failure class of an outcome an agent reports as failed
POLL = 0.5  # seconds between two reads of a waited-on item


class AgentDesk(AgentSteps):
    """The agent commands of one agent (``agent``, an actor holding the agent role)."""

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

    def _checked(self, ref: str) -> tuple[Item | None, Answer | None]:
        """:meth:`_own`, the record held against its head event and that event's seal
        (:meth:`_unsealed`)."""
        found, problem = self._own(ref)
        if found is None:
            return None, problem
        return (None, failed) if (failed := self._unsealed(found)) else (found, None)

    def _unsealed(self, item: Item) -> Answer | None:
        """A refusal ``integrity_failed`` saying what failed when ``item`` is not the record
        its head event sealed; an answer read from such a record would tell the agent of a
        state, an outcome or parameters nobody recorded. (A step writes its stop instead.)"""
        head, legacy = self.store.head(item.id)
        findings = head_findings(item, head, legacy)
        if not findings:
            return None
        sentences = [f.text() for f in findings[:5]]
        return refusal([Reason.INTEGRITY_FAILED], *sentences, item=item.id)

    def _unchanged(self, item: Item) -> Answer:
        """What a replay answers (nothing written): the item as recorded, once checked."""
        return self._unsealed(item) or Answer(True, {"written": False, **agent_view(item)})

    def get(self, item: str) -> Answer:
        found, problem = self._checked(item)
        if problem is not None:
            return problem
        assert found is not None
        return Answer(True, agent_view(found))

    def list(self, automation: str | None = None, state: str | None = None) -> Answer:
        if state is not None and state not in {s.value for s in State}:
            return refusal([Reason.INVALID_INPUT], f"no state is called {state!r}")
        names = [automation] if automation else self.store.insights.automation_names()
        mine: list[dict[str, Any]] = []
        for name in names:
            policy = self.store.policy(name)
            if policy is None or not policy.agent:
                continue
            items = self.store.list_items(automation=name, state=state, limit=1000)
            mine += [agent_view(i) for i in items if i.doc("agent") == self.agent]
        mine.sort(key=lambda v: str(v["next_eligible_at"]), reverse=True)
        return Answer(True, {"items": mine})

    def wait(self, item: str, digest: str | None = None, timeout: int = 30) -> Answer:
        """Wait for a person's decision: ``approved``, ``rejected``, ``changed`` or
        ``waiting`` (or the item's state when it is elsewhere); at most ``timeout`` s."""
        deadline = time.monotonic() + max(0, timeout)
        while True:
            found, problem = self._checked(item)
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
            return self._unchanged(item)  # a replay
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
            return self._unchanged(item)
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
            return self._unchanged(item)
        data = dict(evidence or {})

        def command(token: int) -> Command:
            return NeedsEyes(self.agent, token, owner=owner, why=why, evidence=data)

        return self._answer(self._step(item, policy, command), State.EXCEPTION)

    # --- writing: the approved action ---------------------------------------------------------

    def begin(self, item: str, digest: str) -> Answer:
        """Take the acting step of an approved proposal: the record, the registry and every
        approval are checked again (as a worker does before it acts); ``delivering`` on
        success, held by this agent. After a retryable failure (the item delivering, held by
        nobody) the same checks come before the agent acts again, and nothing is written
        unless they fail."""
        if reasons := self._identity_reasons():
            return refusal(reasons)
        found, problem = self._own(item)
        if problem is not None:
            return problem
        assert found is not None
        policy = self.store.policy(found.automation)
        if policy is None:
            return refusal([Reason.UNKNOWN_AUTOMATION])
        if found.state is State.DELIVERING and found.lease_owner is not None:  # begun, held
            return refusal(
                [Reason.ILLEGAL_TRANSITION],
                "the action was begun already: record its outcome (record_outcome); it is"
                " never begun twice, so no two callers act on one approval",
                **agent_view(found),
            )
        current = (found.doc("proposal") or {}).get("digest")
        if current != digest:
            return refusal([Reason.PROPOSAL_DIGEST_MISMATCH], **agent_view(found))
        if found.state not in (State.APPROVED, State.DELIVERING):
            return refusal([Reason.ILLEGAL_TRANSITION], **agent_view(found))
        claimed, problem = self._claim(found, policy)
        if problem is not None:
            return problem
        assert claimed is not None
        checked = self._guard(claimed, policy)
        if checked.outcome is not Outcome.ZERO_WRITE:
            return self._answer(checked, State.DELIVERING)
        if found.state is State.DELIVERING:  # a retry: the approval holds, act again
            return Answer(True, {"written": False, **agent_view(found)})
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
                return self._unchanged(found)
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
            if decision.state is not State.PENDING_READBACK or decision.after is None:
                return self._answer(decision, State.PENDING_READBACK)
            found = decision.after
        decision = self._step(found, policy, lambda t: ReadBack(self.agent, t, readbacks={}))
        return self._answer(decision, State.COMPLETED)

    def note(self, item: str, body: str, family: str = "unspecified", name: str = "") -> Answer:
        """A comment on one of the agent's own items, written as an AI author (its declared name,
        by default the agent's, and model family); nothing else about the item changes."""
        found, problem = self._own(item)
        if problem is not None:
            return problem
        assert found is not None
        author = Author(AuthorKind.AI.value, name or self.agent, family)
        controller = Controller(self.store, clock=self.clock, trust=self.trust)
        decision = controller.note(found.id, actor=self.agent, body=body, author=author)
        if decision.outcome is Outcome.REFUSED:
            return refusal(list(decision.reasons), item=found.id)
        return Answer(True, {"item": found.id, "noted": decision.outcome is Outcome.APPLIED})
