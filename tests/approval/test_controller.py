"""The same rules through the Python API (the Controller), with a fake clock driving time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from stopline.controller import Controller
from stopline.core.decision import Decision, Outcome
from stopline.core.records import Item
from stopline.runtime.automation import App
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.worker import Worker
from stopline.store import Store, open_store

from .apps.refund_app import build_app
from .conftest import Env

T0 = datetime(2026, 5, 1, 9, 0, 0, tzinfo=UTC)
MAX_AGE = 600.0


@dataclass
class FakeClock:
    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class World:
    env: Env
    store: Store
    app: App
    clock: FakeClock = field(default_factory=FakeClock)

    @property
    def controller(self) -> Controller:
        return Controller(self.store, clock=self.clock)

    def work(self) -> None:
        """The scheduler fires, then one worker runs every due step, all at the fake time."""
        Scheduler(self.store, self.app, clock=self.clock).tick(force=True)
        worker = Worker(self.store, self.app, clock=self.clock, renew=False)
        while worker.tick():
            pass

    def item(self, key: str) -> Item:
        found = self.store.find("refund", key)
        assert found is not None
        return found

    def digest(self, key: str) -> str:
        proposal = self.item(key).doc("proposal")
        assert proposal is not None
        return str(proposal["digest"])

    def refused(self, decision: Decision, reasons: list[str]) -> None:
        assert decision.outcome is Outcome.REFUSED, decision
        assert sorted(decision.reasons) == sorted(reasons)


@pytest.fixture
def world(env: Env) -> Iterator[World]:
    app = build_app(env.log, keys=("k1", "k2"), approvals=1, max_evidence_age=MAX_AGE)
    store = open_store(env.url)
    w = World(env, store, app)
    Scheduler(store, app, clock=w.clock).register()
    w.work()
    try:
        yield w
    finally:
        store.close()


@pytest.mark.parametrize("actor", ["", "   "])
def test_empty_actor_is_unknown(world: World, actor: str) -> None:
    """Through the Python API an empty or blank actor is refused actor_unknown, zero writes."""
    before = world.env.dump()
    c = world.controller
    world.refused(
        c.approve("refund/k1", proposal=world.digest("k1"), actor=actor), ["actor_unknown"]
    )
    world.refused(c.edit("refund/k1", actor=actor, params={"amount": 1}), ["actor_unknown"])
    world.refused(c.reject("refund/k1", actor=actor, reason="no"), ["actor_unknown"])
    assert world.env.dump() == before
    assert [r["actor"] for r in world.env.refusals()] == [actor] * 3


def test_stale_evidence_refuses_the_approval(world: World) -> None:
    """Evidence older than the maximum age refuses the approval (evidence_stale), zero writes."""
    world.clock.advance(MAX_AGE + 1)
    before = world.env.dump()
    decision = world.controller.approve("refund/k1", proposal=world.digest("k1"), actor="bob")
    world.refused(decision, ["evidence_stale"])
    assert world.env.dump() == before
    assert world.item("k1").state.value == "awaiting_approval"


def test_evidence_within_its_age_approves_and_past_it_does_not_execute(world: World) -> None:
    """Approved with fresh evidence: executed while fresh, re-checked and sent back once aged."""
    c = world.controller
    worker = Worker(world.store, world.app, clock=world.clock, renew=False)
    world.clock.advance(MAX_AGE - 2)
    assert c.approve("refund/k1", proposal=world.digest("k1"), actor="bob").applied
    while worker.tick():  # k1 runs while its evidence is still fresh ...
        pass
    assert c.approve("refund/k2", proposal=world.digest("k2"), actor="bob").applied
    world.clock.advance(3)  # ... k2 only once its evidence has aged
    while worker.tick():
        pass
    assert [e["item"] for e in world.env.executions()] == [world.item("k1").id]
    k2 = world.item("k2")
    assert k2.state.value == "awaiting_approval"
    last = world.store.history(k2.id)[-1]
    assert (last.command, last.reasons) == ("recheck_failed", ("evidence_stale",))


def test_time_never_approves(world: World) -> None:
    """A year of scheduler and worker runs leaves a waiting item exactly where it was."""
    before = {k: world.item(k) for k in ("k1", "k2")}
    for _ in range(12):
        world.clock.advance(31 * 86400)
        world.work()
    for key, item in before.items():
        after = world.item(key)
        assert (after.state, after.seq, after.version) == (item.state, item.seq, item.version)
    assert world.env.executions() == []


def test_one_of_two_approvers_revoked_keeps_the_other_approval(env: Env) -> None:
    """With two approvers and one revoked, the re-check keeps the valid approval: "1 of 2" again."""
    clock = FakeClock()
    app = build_app(env.log, approvals=2, max_evidence_age=MAX_AGE)
    store = open_store(env.url)
    try:
        w = World(env, store, app, clock)
        Scheduler(store, app, clock=clock).register()
        w.work()
        c = w.controller
        digest = w.digest("k1")
        assert c.approve("refund/k1", proposal=digest, actor="bob").applied
        assert c.approve("refund/k1", proposal=digest, actor="erin").state.value == "approved"
        c.revoke_actor("bob", "approver")
        w.work()
        item = w.item("k1")
        assert item.state.value == "awaiting_approval"
        proposal = item.doc("proposal")
        assert proposal is not None
        assert [a["actor"] for a in proposal["approvals"]] == ["erin"]
        last = store.history(item.id)[-1]
        assert last.command == "recheck_failed"
        assert sorted(last.reasons) == ["actor_not_authorized", "approvals_missing"]
        assert list(last.detail["voided_approvals"]) == ["bob"]
        assert env.executions() == []
        assert c.approve("refund/k1", proposal=digest, actor="alice").state.value == "approved"
        w.work()
        assert [e["digest"] for e in env.executions()] == [digest]
    finally:
        store.close()
