"""The scheduler, rule by rule, on both stores: discovery only ever inserts new keys, rejects
what the input boundary refuses before anything is written, runs on its schedule, and
registering an app seeds only actors the registry has never known."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from integrity.attacker import Attacker
from stopline import App, ApprovalPolicy, ApprovalRule, Automation, Evidence, Proposal
from stopline.core.names import InvalidName
from stopline.core.records import Actor
from stopline.runtime.automation import Discovered, HookContext
from stopline.runtime.scheduler import MAX_KEY, Scheduler
from stopline.runtime.worker import Worker
from stopline.store import Store

T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
EVERY = 3600


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def automation(found: Callable[[], Iterable[Any]]) -> Automation:
    def discover(ctx: HookContext) -> Iterable[Any]:
        return found()

    return Automation(
        "ops",
        discover,
        lambda ctx: Evidence({"seen": True}),
        lambda ctx: Proposal("publish", {"page": "status"}),
        every=EVERY,
        approval=ApprovalPolicy(default=ApprovalRule(approvals=1, roles=("approver",))),
    )


def scheduler(store: Store, found: Callable[[], Iterable[Any]], **app: Any) -> Scheduler:
    made = Scheduler(store, App([automation(found)], **app), clock=Clock())
    made.register()
    return made


def keys(store: Store) -> list[str]:
    return sorted(item.key for item in store.list_items(automation="ops"))


def refusals(store: Store) -> int:
    return sum(r.count for r in store.insights.refusal_counts())


# --- discovery only inserts new keys -------------------------------------------------------


def test_rediscovery_leaves_every_existing_item_exactly_as_it_is(store: Store) -> None:
    """Items moved on (one stopped at its approval) are found again with a new key beside
    them: only the new key is written; the others keep their state, version and history."""
    found = ["a", "b"]
    s = scheduler(store, lambda: found)
    assert s.tick(force=True)[0].new == 2
    worker = Worker(store, s.app, worker_id="w1", renew=False, host_trust=False)
    while worker.tick():
        pass
    before = {i.key: (i.state, i.version, len(store.history(i.id))) for i in store.list_items()}
    assert {state.value for state, _, _ in before.values()} == {"awaiting_approval"}

    found.append("c")
    fired = s.tick(force=True)[0]
    assert (fired.new, fired.existing, fired.rejected) == (1, 2, 0)
    after = {i.key: (i.state, i.version, len(store.history(i.id))) for i in store.list_items()}
    assert {k: after[k] for k in ("a", "b")} == before
    assert after["c"][0].value == "observing"


def test_a_key_listed_twice_in_one_discovery_is_one_item(store: Store) -> None:
    fired = scheduler(store, lambda: ["a", "a", Discovered("a")]).tick(force=True)[0]
    assert (fired.new, fired.existing, fired.rejected) == (1, 2, 0)
    assert keys(store) == ["a"]


# --- the input boundary, each rule on its own ----------------------------------------------


class NoText:
    def __str__(self) -> str:
        raise ValueError("no text")


@pytest.mark.parametrize(
    "entry",
    [
        "",
        "k" * (MAX_KEY + 1),
        "a\x00b",
        NoText(),
        Discovered(123),  # type: ignore[arg-type]
        Discovered("with-input", input=["not", "a", "mapping"]),  # type: ignore[arg-type]
        Discovered("big", input={"text": "x" * (256 * 1024 + 1)}),
    ],
    ids=["empty", "too-long", "nul", "no-text", "key-not-text", "input-not-mapping", "too-big"],
)
def test_an_entry_outside_the_limits_is_rejected_before_anything_is_written(
    store: Store, entry: Any
) -> None:
    """Rejected by the scheduler itself: no item, no refusal to audit, and the good key
    listed beside it is inserted all the same."""
    fired = scheduler(store, lambda: [entry, "good"]).tick(force=True)[0]
    assert (fired.new, fired.existing, fired.rejected) == (1, 0, 1)
    assert keys(store) == ["good"]
    assert refusals(store) == 0


def test_a_key_of_the_longest_length_is_taken(store: Store) -> None:
    fired = scheduler(store, lambda: ["k" * MAX_KEY]).tick(force=True)[0]
    assert fired.new == 1


def test_a_discovery_that_raises_writes_nothing_and_runs_again_next_tick(store: Store) -> None:
    calls: list[int] = []

    def found() -> list[str]:
        calls.append(1)
        raise RuntimeError("the inventory is down")

    s = scheduler(store, found)
    fired = s.tick()[0]
    assert (fired.new, fired.existing, fired.rejected) == (0, 0, 0)
    assert store.last_discovery("ops") is None
    assert s.due(s.app.automations[0], T0)
    s.tick()
    assert len(calls) == 2 and keys(store) == []


# --- the schedule --------------------------------------------------------------------------


def counted(store: Store) -> tuple[Scheduler, Clock, list[int]]:
    """A scheduler whose discovery lists ``a``, its clock, and a list that grows by one at
    each discovery."""
    calls: list[int] = []

    def found() -> list[str]:
        calls.append(1)
        return ["a"]

    s = scheduler(store, found)
    assert isinstance(s.clock, Clock)
    return s, s.clock, calls


def test_discovery_runs_once_per_period(store: Store) -> None:
    s, clock, calls = counted(store)
    assert s.next_fire() == T0
    s.tick()
    assert store.last_discovery("ops") == T0
    assert s.next_fire() == T0 + timedelta(seconds=EVERY)
    clock.now = T0 + timedelta(seconds=EVERY - 1)
    assert s.tick() == [] and len(calls) == 1
    clock.now = T0 + timedelta(seconds=EVERY)
    assert [f.existing for f in s.tick()] == [1] and len(calls) == 2
    assert store.last_discovery("ops") == clock.now


def test_a_last_discovery_recorded_in_the_future_does_not_hold_discovery_off(
    store: Store,
) -> None:
    """A writer of the database sets the schedule's last run a year ahead: before, discovery
    of the automation stopped for a year, silently. A last run later than now by more than
    two clocks may differ is untrue: the scheduler runs discovery now (and records it)."""
    s, clock, calls = counted(store)
    s.tick()
    store.set_last_discovery("ops", T0 + timedelta(days=365))  # what the writer does
    clock.now = T0 + timedelta(seconds=EVERY)
    assert s.next_fire() == clock.now
    assert [f.existing for f in s.tick()] == [1] and len(calls) == 2
    assert store.last_discovery("ops") == clock.now
    store.set_last_discovery("ops", clock.now + timedelta(seconds=20))  # within the skew
    assert s.tick() == [] and len(calls) == 2


# --- registering: names and seeded actors --------------------------------------------------


def test_seeding_writes_each_actor_once(store: Store) -> None:
    app = App([automation(list)], actors={"alice": ["approver"]})
    Scheduler(store, app).register()
    events = len(store.actor_events())
    Scheduler(store, app).register()
    assert len(store.actor_events()) == events
    assert store.actors()["alice"].roles == frozenset({"approver"})


def test_an_actor_that_looks_like_a_registered_one_is_refused(store: Store) -> None:
    store.set_actor(Actor("alice", frozenset({"approver"})), "add", {}, T0)
    events = len(store.actor_events())
    app = App([automation(list)], actors={"a1ice": ["approver"]})
    with pytest.raises(InvalidName, match="looks like the registered actor 'alice'"):
        Scheduler(store, app).register()
    assert len(store.actor_events()) == events
    assert store.policy("ops") is None, "nothing is registered when a seed is refused"


def test_a_revoked_actor_is_never_seeded_again(store: Store, store_url: str) -> None:
    """Revoked in the registry chain, then the table row gone (deleted by hand): the app
    that still declares the actor does not bring it back."""
    app = App([automation(list)], actors={"rita": ["approver"]})
    Scheduler(store, app).register()
    store.set_actor(Actor("rita", frozenset({"approver"}), active=False), "deactivate", {}, T0)
    attacker = Attacker(store_url)
    try:
        attacker.sql("DELETE FROM actors WHERE name = 'rita'")
    finally:
        attacker.close()
    events = len(store.actor_events())
    Scheduler(store, app).register()
    assert len(store.actor_events()) == events
    assert "rita" not in store.actors()


@pytest.mark.parametrize(
    "spoil",
    ["automation", "actor", "role"],
)
def test_names_spoiled_after_construction_are_refused_and_nothing_is_stored(
    store: Store, spoil: str
) -> None:
    """An ``App`` and an ``Automation`` are checked when made, and can be changed after:
    registering checks the names again before it stores anything."""
    made = automation(list)
    actors: dict[str, list[str]] = {"alice": ["approver"]}
    app = App([made], actors=actors)
    if spoil == "automation":
        made.name = "Ops Team"
    elif spoil == "actor":
        actors["Bob Smith"] = ["approver"]
    else:
        actors["alice"] = ["Approver "]
    with pytest.raises(InvalidName):
        Scheduler(store, app).register()
    assert store.actor_events() == []
    assert store.policy("ops") is None and store.policy("Ops Team") is None
