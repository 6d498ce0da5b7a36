"""A stateful test of approval against a small reference model.

Random sequences of propose, edit, reinspect (then observe and propose again), approve (by
several actors: approvers, the proposer, editors, actors without roles, actors revoked or
stripped of their role mid-way), reject, clock advances past ``max_evidence_age`` and execute.
The model tracks, independently of the core, which proposal generation is current, who approved
it, who proposed and last edited it, and when its evidence was observed. After every step:

* nothing reaches ``delivering`` unless at least N distinct actors approved the CURRENT digest,
  each still known, active, holding a required role and not its proposer or last editor (with
  separation of duties), and the evidence is fresh;
* conversely, when the model says authority holds, execute does start the delivery;
* an approval is applied exactly when the model says it is valid, and only for the current digest;
* the approvals the item shows are a subset of the model's, all bound to the current digest.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from budget import examples
from stopline.core.commands import Approve, Edit, Execute, Observe, Propose, Reinspect, Reject
from stopline.core.decision import Decision, Outcome
from stopline.core.records import Actor
from stopline.core.states import State

from .helpers import AUTOMATION_PROPOSER, Clock, Harness, claimable, policy

S = State
MAX_AGE = 600.0
APPROVERS = ["a1", "a2", "a3", "a4"]
NAMES = [*APPROVERS, "ca", "ed", "nora", "stranger", AUTOMATION_PROPOSER]


def registry() -> dict[str, Actor]:
    people = [Actor(n, frozenset({"approver"})) for n in APPROVERS]
    people += [
        Actor("ca", frozenset({"approver", "operator"})),  # may edit and approve
        Actor("ed", frozenset({"operator"})),  # may edit, never approve
        Actor("nora", frozenset()),
        Actor(AUTOMATION_PROPOSER, frozenset({"approver"})),
    ]
    return {a.name: a for a in people}


class ApprovalModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.actors = registry()
        self.required = 1
        self.separation = True
        self.h = Harness()
        self.items = 0
        self.executed = 0
        # the model
        self.generation = 0
        self.digests: dict[int, str] = {}
        self.approvals: dict[str, int] = {}  # actor -> generation approved
        self.editor: str | None = None
        self.editors: set[str] = set()
        self.returners: set[str] = set()  # whose `reject --return` the proposal answers
        self.observed_at: datetime | None = None

    # --- model ---------------------------------------------------------------------------------

    def valid_now(self, name: str) -> bool:
        actor = self.actors.get(name)
        if actor is None or not actor.active or "approver" not in actor.roles:
            return False
        barred = {AUTOMATION_PROPOSER, *self.editors, *self.returners}
        return not (self.separation and name in barred)

    def fresh(self) -> bool:
        assert self.observed_at is not None
        return self.clock.now - self.observed_at < timedelta(
            seconds=MAX_AGE
        )  # younger than the maximum

    def valid_approvals(self) -> set[str]:
        return {a for a, g in self.approvals.items() if g == self.generation and self.valid_now(a)}

    def authority_holds(self) -> bool:
        return len(self.valid_approvals()) >= self.required and self.fresh()

    def new_generation(self, editor: str | None) -> None:
        self.generation += 1
        self.digests[self.generation] = self.h.digest()
        self.approvals = {}
        self.editor = editor
        # every editor of a proposal is barred from approving it; a fresh proposal starts clean
        self.editors = set() if editor is None else {*self.editors, editor}

    # --- driving the item ----------------------------------------------------------------------

    def fresh_item(self) -> None:
        self.returners = set()  # a new item answers nobody's return
        self.items += 1
        self.h = Harness(
            policy=self.policy, actors=self.actors, clock=self.clock, item_id=f"auto-{self.items}"
        )
        self.h.discover()
        self.observe()
        self.propose(0)

    def worker(self) -> dict[str, object]:
        item = self.h.it
        if not claimable(item, self.clock.now):
            self.h.claim()
        return self.h.lease()

    def observe(self) -> None:
        self.h.ok(
            Observe(**self.worker(), evidence={"t": self.clock.now}, observed_at=self.clock.now)
        )
        self.observed_at = self.clock.now

    def propose(self, grace: int) -> None:
        wc = self.worker()
        self.h.ok(Propose(**wc, action="restart", target="web", params={"grace": grace}))
        assert self.h.state is S.AWAITING_APPROVAL
        self.new_generation(None)

    @property
    def state(self) -> State:
        return self.h.state

    # --- rules -----------------------------------------------------------------------------------

    @initialize(required=st.integers(1, 3), separation=st.sampled_from([True, True, True, False]))
    def start(self, required: int, separation: bool) -> None:
        self.required, self.separation = required, separation
        self.policy = policy(
            approvals=required, max_evidence_age=MAX_AGE, separation_of_duties=separation
        )
        self.fresh_item()

    @rule(seconds=st.sampled_from([1, 30, 120, 300, 601]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @precondition(lambda self: self.h.state is S.OBSERVING)
    @rule()
    def observe_again(self) -> None:
        self.observe()

    @precondition(lambda self: self.h.state is S.CLASSIFIED)
    @rule(grace=st.integers(0, 2))
    def propose_again(self, grace: int) -> None:
        self.propose(grace)

    @rule(actor=st.sampled_from(NAMES), grace=st.integers(0, 3))
    def edit(self, actor: str, grace: int) -> None:
        before = self.h.digest() if self.state is S.AWAITING_APPROVAL else None
        d = self.h.apply(Edit(actor, {"grace": grace}))
        if d.applied:
            assert before is not None and self.h.digest() != before
            assert self.h.it.doc("proposal")["approvals"] == ()
            self.new_generation(actor)

    @rule(actor=st.sampled_from(NAMES))
    def reinspect(self, actor: str) -> None:
        d = self.h.apply(Reinspect(actor, "fresh evidence please"))
        if d.applied:
            assert self.state is S.OBSERVING and self.h.it.doc("proposal") is None
            self.approvals = {}
            self.returners = set()  # the next proposal answers fresh evidence, not a return

    @rule(actor=st.sampled_from(NAMES), back=st.integers(0, 3))
    def approve_anyone(self, actor: str, back: int) -> None:
        self.approve(actor, back)

    @rule(actor=st.sampled_from(APPROVERS), back=st.sampled_from([0, 0, 0, 1]))
    def approve(self, actor: str, back: int) -> None:
        """Approve the current digest, or one ``back`` generations old."""
        generation = max(self.generation - back, 1)
        digest = self.digests.get(generation, "0" * 64)
        awaiting = self.state is S.AWAITING_APPROVAL
        current = awaiting and digest == self.h.digest()
        already = actor in self.approvals and self.approvals[actor] == self.generation
        d = self.h.apply(Approve(actor, digest))
        should = current and self.valid_now(actor) and self.fresh() and not already
        assert d.applied == should, (d.outcome, d.reasons, actor, current, self.fresh())
        if d.applied:
            # recording an approval drops those whose authority no longer holds, for good
            self.approvals = {
                a: g
                for a, g in self.approvals.items()
                if g == self.generation and self.valid_now(a)
            }
            self.approvals[actor] = self.generation
            shown = len(self.h.it.doc("proposal")["approvals"])
            assert (self.state is S.APPROVED) == (shown >= self.required)
        elif current and already and self.valid_now(actor) and self.fresh():
            assert d.outcome is Outcome.ZERO_WRITE and d.reasons == ("already_approved",)

    @rule(actor=st.sampled_from(NAMES), back=st.booleans())
    def reject(self, actor: str, back: bool) -> None:
        d = self.h.apply(Reject(actor, "not like this", send_back=back))
        if d.applied:
            assert self.state is (S.CLASSIFIED if back else S.CLOSED)
            self.approvals = {}
            if back:
                self.returners.add(actor)
            else:
                self.returners = set()
                self.fresh_item()

    @rule(
        name=st.sampled_from([*APPROVERS, "ca", AUTOMATION_PROPOSER]),
        change=st.sampled_from(["revoke", "strip", "restore", "restore"]),
    )
    def registry_change(self, name: str, change: str) -> None:
        original = registry()[name]
        self.actors[name] = {
            "revoke": replace(original, active=False),
            "strip": replace(original, roles=frozenset({"operator"})),
            "restore": original,
        }[change]

    @precondition(lambda self: self.h.state is S.APPROVED)
    @rule()
    def execute(self) -> None:
        holds = self.authority_holds()
        valid = self.valid_approvals()
        d: Decision = self.h.ok(Execute(**self.worker()))
        if d.state is S.DELIVERING:
            # THE property: no execution without N valid approvals of the current digest
            assert holds, (valid, self.required, self.fresh())
            approvers = set(d.event.detail["approvers"])
            assert len(approvers) >= self.required and approvers <= valid
            self.executed += 1
            self.fresh_item()
        else:
            assert d.state is S.AWAITING_APPROVAL and d.event.command == "recheck_failed"
            assert not holds, (valid, d.reasons)
            # the core voids what no longer holds; the model follows
            kept = {a["actor"] for a in self.h.it.doc("proposal")["approvals"]}
            assert kept == (valid if self.fresh() else set())
            self.approvals = {a: self.generation for a in kept}

    # --- invariants ------------------------------------------------------------------------------

    @invariant()
    def shown_approvals_follow_the_model(self) -> None:
        assert self.state is not S.DELIVERING  # every execution is checked and replaced above
        proposal = self.h.it.doc("proposal")
        if proposal is None:
            return
        assert proposal["digest"] == self.digests[self.generation]
        shown = {a["actor"] for a in proposal["approvals"]}
        assert all(a["digest"] == proposal["digest"] for a in proposal["approvals"])
        assert shown <= {a for a, g in self.approvals.items() if g == self.generation}
        assert proposal["edited_by"] == self.editor


def _settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


class FastApprovalModel(ApprovalModel):
    pass


FastApprovalModel.TestCase.settings = _settings(examples(150), 50)
test_approval_model = FastApprovalModel.TestCase


class SlowApprovalModel(ApprovalModel):
    pass


SlowApprovalModel.TestCase.settings = _settings(500, 80)
test_approval_model_slow = pytest.mark.slow(SlowApprovalModel.TestCase)


def test_the_model_executes_a_two_of_two_approval() -> None:
    """A scripted run: two valid approvals, execute, delivering (the model is not vacuous)."""
    m = ApprovalModel()
    m.start(2, True)
    m.approve(AUTOMATION_PROPOSER, 0)  # refused: self approval
    m.approve("a1", 0)
    m.approve("a1", 0)  # zero write
    m.registry_change("a2", "revoke")
    m.approve("a2", 0)  # refused: revoked
    m.registry_change("a2", "restore")
    m.approve("a2", 0)
    assert m.state is S.APPROVED
    m.execute()
    assert m.executed == 1 and m.items == 2 and m.state is S.AWAITING_APPROVAL


def test_the_model_sends_stale_evidence_back() -> None:
    """Approved, then the evidence ages: execute goes back to awaiting_approval."""
    m = ApprovalModel()
    m.start(1, True)
    m.approve("a1", 0)
    m.advance(601)
    m.execute()
    assert m.executed == 0 and m.state is S.AWAITING_APPROVAL
    assert m.h.it.doc("proposal")["approvals"] == ()
