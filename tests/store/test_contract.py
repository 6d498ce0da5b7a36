"""The behaviour every store must show, run once against SQLite and once against PostgreSQL."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from helpers import T0, count, decide_at, discover, dump
from stopline.core.canonical import CanonicalError, canonical_json, digest, format_time
from stopline.core.commands import Discover, Failure, NeedsEyes, Observe
from stopline.core.decision import Decision, Outcome
from stopline.core.policy import Policy, RetryPolicy
from stopline.core.records import Actor, Item
from stopline.core.states import State
from stopline.store import SchemaMismatch, Store, open_store, raw
from stopline.store.queries import migrations

S = timedelta(seconds=1)


def claimed(store: Store, worker: str = "w1", at: datetime = T0, lease: float = 30.0) -> Item:
    item = store.claim(worker, at, lease)
    assert item is not None
    return item


def observe(item: Item, at: datetime) -> Decision:
    """The real core's decision for a worker's observation of a claimed item."""
    assert item.lease_owner is not None
    command = Observe(item.lease_owner, item.lease_token, {"seen": item.key}, at)
    decision = decide_at(item, command, at)
    assert decision.outcome is Outcome.APPLIED
    return decision


def fail(item: Item, at: datetime, *, retryable: bool, policy: Policy | None = None) -> Decision:
    assert item.lease_owner is not None
    command = Failure(item.lease_owner, item.lease_token, "boom", "it broke", retryable)
    return decide_at(item, command, at, policy)


# --- schema ---------------------------------------------------------------------------------


def known_versions(store: Store) -> list[int]:
    """The versions of the migration files this stopline ships for the store's dialect."""
    return [version for version, _, _ in migrations(store.dialect)]


def test_migrate_is_idempotent(store: Store) -> None:
    """Migrating a migrated store applies nothing and leaves the schema check passing."""
    before = dump(store)
    assert store.migrate() == []
    assert store.schema_version() == store.known_version == known_versions(store)[-1]
    store.check_schema()
    assert dump(store) == before


def test_blank_database_needs_migration(blank_store_url: str) -> None:
    """An empty database fails the schema check until migrated, then passes."""
    store = open_store(blank_store_url, migrate=False, check=False)
    try:
        assert store.schema_version() == 0
        with pytest.raises(SchemaMismatch, match="stopline migrate"):
            store.check_schema()
        assert store.migrate() == known_versions(store)
        assert store.migrate() == []
        store.check_schema()
    finally:
        store.close()


# --- automations and items -------------------------------------------------------------------


def test_register_automation_writes_only_a_new_version(store: Store) -> None:
    """Registering a policy stores it; the same version again writes nothing."""
    assert store.policy("auto") is None
    policy = Policy(retry=RetryPolicy(max_attempts=5, base_delay=0.5), lease_seconds=12.5)
    store.register_automation("auto", policy, T0)
    assert store.policy("auto") == policy
    before = dump(store)
    store.register_automation("auto", policy, T0 + S)
    assert dump(store) == before
    changed = Policy(retry=RetryPolicy(max_attempts=2))
    store.register_automation("auto", changed, T0 + S)
    assert store.policy("auto") == changed


def test_item_round_trips(store: Store) -> None:
    """An inserted item reads back with the same values, by id and by key, with its event."""
    data = {"text": "Grüße ✓", "n": 1.5, "big": 10**15, "nested": [1, None, {"a": True}]}
    decision = decide_at(None, Discover("item-1", "auto", "k1", data), T0)
    assert store.insert(decision)
    assert decision.after is not None
    written = canonical_json(decision.after)
    assert canonical_json(store.get("item-1")) == written
    assert canonical_json(store.find("auto", "k1")) == written
    assert store.get("missing") is None and store.find("auto", "nope") is None
    assert store.history("item-1") == [decision.event]


def test_discovery_is_unique_by_automation_and_key(store: Store) -> None:
    """A re-discovery of an existing (automation, key) writes nothing at all."""
    item = discover(store, "k1")
    before = dump(store)
    assert decide_at(item, Discover(item.id, "auto", "k1"), T0 + S).outcome is Outcome.ZERO_WRITE
    again = decide_at(None, Discover("another-id", "auto", "k1", {"x": 1}), T0 + S)
    assert not store.insert(again)
    assert dump(store) == before
    assert store.get("another-id") is None
    discover(store, "k1", automation="other")  # the same key in another automation is new
    assert len(store.list_items()) == 2


# --- applying decisions --------------------------------------------------------------------------


def test_apply_writes_the_state_and_exactly_one_event(store: Store) -> None:
    """An applied decision writes the new item and its one event, and bumps the version."""
    discover(store, "k1")
    item = claimed(store)
    events_before = count(store, "events")
    decision = observe(item, T0 + S)
    assert store.apply(decision)
    after = store.get(item.id)
    assert after == decision.after
    assert after is not None and after.state is State.CLASSIFIED
    assert after.version == item.version + 1
    assert count(store, "events") == events_before + 1
    assert store.history(item.id)[-1] == decision.event


def test_apply_is_one_transaction(store: Store) -> None:
    """When any part of an apply fails (a taken idempotency key), none of it is written."""
    discover(store, "k1")
    discover(store, "k2")
    first = observe(claimed(store), T0 + S)
    assert store.apply(first, idempotency=("key-1", "cmd-a", '{"decision":"applied"}'))
    second = observe(claimed(store), T0 + S)
    before = dump(store)
    assert not store.apply(second, idempotency=("key-1", "cmd-b", '{"decision":"applied"}'))
    assert dump(store) == before


def test_stale_decision_writes_nothing(store: Store) -> None:
    """A decision made from an older version of the item returns False and writes nothing."""
    discover(store, "k1")
    item = claimed(store)
    first = fail(item, T0 + S, retryable=True)
    stale = observe(item, T0 + S)  # made from the same version as ``first``
    assert store.apply(first)
    before = dump(store)
    assert not store.apply(stale)
    assert not store.apply(first)  # the same decision twice: the second is stale
    assert dump(store) == before


def test_a_decision_from_before_a_later_claim_writes_nothing(store: Store) -> None:
    """A claim writes no event, only a new version: a worker whose lease ran out and was
    claimed by another decides from the older version, and its decision (whose event would
    follow the last one) is refused by the compare-and-set alone, on either path."""
    discover(store, "k1")
    late = claimed(store, "w1", at=T0, lease=1)
    stale = observe(late, T0 + S / 2)  # decided while its lease held
    taken = claimed(store, "w2", at=T0 + 2 * S)
    assert taken.id == late.id and taken.seq == late.seq and taken.version > late.version
    before = dump(store)
    assert not store.apply(stale)
    assert store.apply_many([stale]) == [False]
    assert dump(store) == before
    assert store.apply_many([observe(taken, T0 + 3 * S)]) == [True]


def test_a_group_a_statement_fails_in_is_written_one_decision_at_a_time(store: Store) -> None:
    """One decision of a group whose event cannot be written (an event at its place was
    inserted by hand) rolls the group's transaction back; the store then writes each decision
    on its own, so the others still commit and only that one is refused."""
    from helpers import insert_by_hand, reconcile_event

    discover(store, "good")
    good = claimed(store)
    discover(store, "bad")
    bad = claimed(store)
    insert_by_hand(store, reconcile_event(bad, T0, "mallory"))
    before = store.get(bad.id)
    assert store.apply_many([observe(good, T0 + S), observe(bad, T0 + S)]) == [True, False]
    written = store.get(good.id)
    assert written is not None and written.state is State.CLASSIFIED
    assert store.get(bad.id) == before


# --- claims and leases --------------------------------------------------------------------------


def test_claim_takes_only_due_work(store: Store) -> None:
    """A claim skips stop, terminal, not-yet-due, live-leased and budget-spent items."""
    slow = Policy(retry=RetryPolicy(base_delay=3600))
    stop = discover(store, "stop", at=T0 - 10 * S)
    c = claimed(store, at=T0 - 10 * S)
    assert c.id == stop.id
    needs_eyes = NeedsEyes(c.lease_owner or "", c.lease_token, "ops", "unclear")
    assert store.apply(decide_at(c, needs_eyes, T0 - 10 * S))
    discover(store, "terminal", at=T0 - 9 * S)
    assert store.apply(fail(claimed(store, at=T0 - 9 * S), T0 - 9 * S, retryable=False))
    discover(store, "future", at=T0 - 8 * S)
    retry = fail(claimed(store, at=T0 - 8 * S), T0 - 8 * S, retryable=True, policy=slow)
    assert retry.after is not None and retry.after.next_eligible_at > T0
    assert store.apply(retry)
    discover(store, "leased", at=T0 - 7 * S)
    claimed(store, "other", at=T0 - 7 * S, lease=60)
    discover(store, "spent", at=T0 - 6 * S, policy=Policy(retry=RetryPolicy(max_attempts=1)))
    claimed(store, "gone", at=T0 - 6 * S, lease=1)
    due = discover(store, "due", at=T0)
    before = store.get(due.id)
    assert before is not None

    got = store.claim("w1", T0, 30)
    assert got is not None and got.id == due.id
    assert got.attempts == before.attempts + 1
    assert got.lease_token == before.lease_token + 1
    assert got.version == before.version + 1
    assert (got.lease_owner, got.claimed_at) == ("w1", T0)
    assert got.lease_expires_at == T0 + 30 * S
    assert store.get(due.id) == got
    assert store.claim("w2", T0, 30) is None


def test_a_stop_state_marked_work_by_hand_is_never_claimed(store: Store) -> None:
    """The claims, the sweep and ``next_due`` read the state itself, not only its class
    column: a stopped item whose ``state_class`` was edited to ``work`` is neither claimed
    (alone or in a batch), though it is unleased, due by its time and has budget left, nor
    swept as spent when its attempts are edited up to its budget, nor due."""
    for key in ("stop", "spent"):
        discover(store, key, at=T0 - 10 * S)
        c = claimed(store, at=T0 - 10 * S)
        needs_eyes = NeedsEyes(c.lease_owner or "", c.lease_token, "ops", "unclear")
        assert store.apply(decide_at(c, needs_eyes, T0 - 10 * S))
        stopped = store.get(c.id)
        assert stopped is not None and stopped.state is State.EXCEPTION
        assert stopped.lease_owner is None and stopped.attempts < stopped.max_attempts
        assert stopped.next_eligible_at <= T0
    with raw.writing(store) as cur:  # around the store's own methods
        cur.execute("UPDATE items SET state_class = 'work'")
        cur.execute("UPDATE items SET attempts = max_attempts WHERE key = 'spent'")
    before = dump(store)
    assert store.claim("w2", T0, 30) is None
    assert store.claim_batch("w2", T0, 30, limit=10) == []
    assert store.sweepable(T0) == []
    assert store.next_due() is None
    assert dump(store) == before


def test_a_revision_whose_lease_ran_out_is_swept_not_claimed(store: Store) -> None:
    """A step whose worker died is claimed again when its lease ends; a revision is not (its
    writes may have half landed, so a person decides): it is sweepable instead."""
    for key in ("step", "revision"):
        discover(store, key, at=T0 - 10 * S)
        claimed(store, "gone", at=T0 - 10 * S, lease=1)
    with raw.writing(store) as cur:  # around the store's own methods
        cur.execute("UPDATE items SET state = 'revision_prepared' WHERE key = 'revision'")
    step = store.find("auto", "step")
    revision = store.find("auto", "revision")
    assert step is not None and revision is not None
    assert [i.id for i in store.sweepable(T0)] == [revision.id]
    got = store.claim_batch("w2", T0, 30, limit=10)
    assert [i.id for i in got] == [step.id]
    assert store.claim("w3", T0, 30) is None
    assert store.get(revision.id) == revision


def test_next_due_waits_for_a_live_lease_to_end(store: Store) -> None:
    """A leased step is next due when its lease ends, not at its (earlier) due time: a
    worker that waited only for that would wake at once, again and again, and find nothing.
    On the last attempt too, since a dead worker's lease is swept when it ends."""
    discover(store, "k1", at=T0 - 10 * S)
    claimed(store, "w1", at=T0, lease=30)
    assert store.next_due() == T0 + 30 * S
    discover(store, "last", at=T0 - 10 * S, policy=Policy(retry=RetryPolicy(max_attempts=1)))
    claimed(store, "w2", at=T0, lease=20)
    assert store.next_due() == T0 + 20 * S
    assert store.next_due(["auto"]) == T0 + 20 * S


def test_claim_order_and_automation_filter(store: Store) -> None:
    """Claims take the most overdue item first, and only from the automations named."""
    discover(store, "late", at=T0, automation="a")
    discover(store, "early", at=T0 - S, automation="b")
    assert store.next_due() == T0 - S
    assert store.next_due(["a"]) == T0
    assert store.next_due(["nothing"]) is None
    before = dump(store)
    assert store.claim("w", T0, 30, ["nothing"]) is None
    assert store.claim("w", T0, 30, []) is None
    assert dump(store) == before
    first = store.claim("w", T0, 30)
    assert first is not None and first.key == "early"
    only_a = store.claim("w", T0, 30, ["a"])
    assert only_a is not None and only_a.key == "late"


def test_each_automation_gets_its_own_lease(store: Store) -> None:
    """With a lease per automation, a claimed item's lease is its automation's, to the
    microsecond; an automation the map does not name gets the lease given beside it."""
    discover(store, "short", at=T0 - 3 * S, automation="a")
    discover(store, "long", at=T0 - 2 * S, automation="b")
    discover(store, "other", at=T0 - S, automation="c")
    at = T0 + timedelta(microseconds=123457)
    leases = {"a": 2.0, "b": 5.5}
    got = [store.claim("w", at, 30, ["a", "b", "c"], leases=leases) for _ in range(3)]
    assert [(i.key, i.lease_expires_at) for i in got if i is not None] == [
        ("short", at + 2 * S),
        ("long", at + 5.5 * S),
        ("other", at + 30 * S),
    ]
    for item in got:
        assert item is not None and store.get(item.id) == item


def test_expired_lease_is_reclaimed_and_logged(store: Store) -> None:
    """An expired lease may be claimed again; the abandoned attempt joins the attempt log."""
    discover(store, "k1")
    first = claimed(store, "w1", at=T0, lease=10)
    assert store.claim("w2", T0 + 9 * S, 10) is None  # still live
    later = T0 + 11 * S + timedelta(microseconds=654321)
    second = store.claim("w2", later, 10)
    assert second is not None and second.id == first.id
    assert (second.attempts, second.lease_token, second.lease_owner) == (2, 2, "w2")
    assert [dict(e) for e in second.attempt_log] == [
        {
            "attempt": 1,
            "state": "observing",
            "claimed_at": format_time(T0),
            "at": format_time(later),
            "worker": "w1",
            "class": "lease_expired",
            "message": "the lease expired before the worker recorded an outcome",
            "outcome": "abandoned",
        }
    ]
    current = store.get(first.id)
    lost = decide_at(current, Observe("w1", first.lease_token, {}, later), later)
    assert lost.reasons == ("lease_lost",)  # the first worker's token is fenced off


def test_concurrent_claimers_never_share_an_item(store: Store, store_url: str) -> None:
    """Four claimers, each with its own store, take 200 items with no item taken twice."""
    for n in range(200):
        discover(store, f"k{n:03d}", at=T0 - n * timedelta(milliseconds=1))
    barrier = threading.Barrier(4)
    taken: list[list[str]] = [[] for _ in range(4)]
    errors: list[BaseException] = []

    def claimer(n: int) -> None:
        own = open_store(store_url)
        try:
            barrier.wait()
            while (item := own.claim(f"w{n}", T0, 60)) is not None:
                taken[n].append(item.id)
        except BaseException as exc:
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    every = [item_id for ids in taken for item_id in ids]
    assert len(every) == len(set(every)) == 200
    assert all(item.attempts == 1 for item in store.list_items())


def test_sweepable_returns_spent_items_without_a_live_lease(store: Store) -> None:
    """Only work items with their budget spent and no live lease are sweepable."""
    spent = Policy(retry=RetryPolicy(max_attempts=1))
    discover(store, "spent", policy=spent)
    item = claimed(store, lease=10)
    discover(store, "fresh", at=T0 + S)
    assert store.sweepable(T0 + 5 * S) == []  # its lease is still live
    found = store.sweepable(T0 + 10 * S)
    assert [i.id for i in found] == [item.id]
    assert found[0] == store.get(item.id)
    assert store.sweepable(T0 + 10 * S, limit=0) == []


def test_renew_extends_only_with_the_current_token(store: Store) -> None:
    """Renewing needs the live lease's owner and token; otherwise nothing is written."""
    discover(store, "k1")
    item = claimed(store, lease=10)
    assert store.renew(item, T0 + 5 * S, 10)
    renewed = store.get(item.id)
    assert renewed is not None
    assert renewed.lease_expires_at == T0 + 15 * S
    assert renewed.version == item.version  # a renewal is not a decision: no version bump
    before = dump(store)
    assert not store.renew(replace(item, lease_token=item.lease_token - 1), T0 + 6 * S, 10)
    assert not store.renew(replace(item, lease_owner="intruder"), T0 + 6 * S, 10)
    assert not store.renew(item, T0 + 15 * S, 10)  # expired: a renewal cannot revive it
    assert dump(store) == before
    again = claimed(store, "w2", at=T0 + 16 * S, lease=10)
    assert not store.renew(item, T0 + 17 * S, 10)  # the old token lost to the new claim
    assert store.renew(again, T0 + 17 * S, 10)
    assert store.apply(observe(again, T0 + 18 * S))  # the holder's commit still lands


def test_times_must_be_timezone_aware(store: Store) -> None:
    """A naive time is refused before anything is written."""
    discover(store, "k1")
    before = dump(store)
    with pytest.raises(CanonicalError):
        store.claim("w", datetime(2026, 3, 1, 12), 30)
    assert dump(store) == before


# --- reading ------------------------------------------------------------------------------------


def test_listing_filters_orders_and_counts(store: Store) -> None:
    """Listing filters by state, automation, class and key, orders by update time (either way),
    and counts."""
    for n, key in enumerate(["b", "a", "C", "_"]):
        discover(store, key, at=T0 + n * S, automation="x" if n % 2 else "y")
    discover(store, "a", at=T0 + 9 * S)  # same time as the next: ordered by id, bytewise
    discover(store, "Z", at=T0 + 9 * S)
    item = claimed(store, at=T0 + 10 * S)
    assert store.apply(fail(item, T0 + 10 * S, retryable=False))
    listed = store.list_items()
    assert [i.key for i in listed] == ["a", "C", "_", "Z", "a", "b"]
    assert [i.key for i in store.list_items(automation="x")] == ["a", "_"]
    assert [i.key for i in store.list_items(state="failed")] == ["b"]
    assert [i.key for i in store.list_items(state_class="terminal")] == ["b"]
    assert store.list_items(state="observing", automation="x", state_class="work", limit=1) == [
        store.find("x", "a")
    ]
    assert store.list_items(limit=2) == listed[:2]
    # the database sorts and filters before the limit: the newest first, a key anywhere
    assert store.list_items(newest=True, limit=2) == listed[::-1][:2]
    assert store.list_items(newest=True) == listed[::-1]
    assert [i.automation for i in store.list_items(key="a", limit=1)] == ["x"]
    assert [i.automation for i in store.list_items(key="a", newest=True, limit=1)] == ["auto"]
    assert store.list_items(key="a", automation="auto") == [listed[4]]
    assert store.list_items(key="a", automation="y") == []
    assert store.count_by_state() == [
        {"state": "failed", "count": 1, "oldest": T0 + 10 * S},
        {"state": "observing", "count": 5, "oldest": T0 + S},
    ]
    pairs = list(store.iter_items_with_events())
    assert [i.id for i, _ in pairs] == sorted(i.id for i in listed)
    assert all(events == store.history(i.id) and events[-1].hash == i.head for i, events in pairs)


# --- actors, tokens, idempotency, refusals, schedules ----------------------------------------


def test_actors_and_their_hash_chained_events(store: Store) -> None:
    """Each actor change is stored with one event, chained to the one before."""
    store.set_actor(Actor("ann", frozenset({"operator"})), "add", {"by": "cli"}, T0)
    store.set_actor(Actor("bob", frozenset({"approver", "operator"})), "add", {}, T0 + S)
    store.set_actor(Actor("ann", frozenset({"operator"}), active=False), "revoke", {}, T0 + 2 * S)
    assert store.actors() == {
        "ann": Actor("ann", frozenset({"operator"}), active=False),
        "bob": Actor("bob", frozenset({"approver", "operator"})),
    }
    events = store.actor_events()
    assert [(e["actor"], e["change"], e["at"]) for e in events] == [
        ("ann", "add", T0),
        ("bob", "add", T0 + S),
        ("ann", "revoke", T0 + 2 * S),
    ]
    assert events[0]["detail"] == {"by": "cli", "state": {"roles": ["operator"], "active": True}}
    prev = ""
    for e in events:
        body = {"at": e["at"], "actor": e["actor"], "change": e["change"], "detail": e["detail"]}
        assert e["prev_hash"] == prev
        assert e["hash"] == digest({**body, "prev_hash": prev})
        prev = e["hash"]


def test_concurrent_actor_changes_keep_one_chain(store: Store, store_url: str) -> None:
    """Actor changes from several processes' stores at once still form one unbroken chain."""
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        own = open_store(store_url)
        try:
            barrier.wait()
            for k in range(10):
                own.set_actor(Actor(f"a{n}", frozenset({"operator"})), f"c{k}", {}, T0)
        except BaseException as exc:
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    events = store.actor_events()
    assert len(events) == 40
    assert [e["prev_hash"] for e in events] == ["", *(e["hash"] for e in events[:-1])]


def test_tokens_map_to_actors_until_revoked(store: Store) -> None:
    """A token names its actor until the actor's tokens are revoked."""
    store.set_actor(Actor("ann", frozenset({"operator"})), "add", {}, T0)
    store.add_token("ann", "hash-1", T0)
    store.add_token("ann", "hash-2", T0)
    assert store.token_actor("hash-1") == "ann"
    assert store.token_actor("unknown") is None
    store.revoke_tokens("ann", T0 + S)
    assert store.token_actor("hash-1") is None and store.token_actor("hash-2") is None
    with pytest.raises(Exception, match=r"(?i)foreign key"):
        store.add_token("nobody", "hash-3", T0)


def test_idempotency_rows_return_the_original_decision(store: Store) -> None:
    """The decision stored under an idempotency key comes back exactly as written."""
    discover(store, "k1")
    decision = observe(claimed(store), T0 + S)
    text = '{"decision":"applied","item":"auto-k1","reasons":[],"sequence":2,"state":"x"}'
    assert store.idempotency("key-1") is None
    assert store.apply(decision, idempotency=("key-1", "digest-1", text))
    assert store.idempotency("key-1") == ("digest-1", text)


def test_refusals_are_audited_apart(store: Store) -> None:
    """Recording a refusal adds one audit row and changes nothing else."""
    item = discover(store, "k1")
    refusal = decide_at(item, Observe("w", 99, {}, T0), T0)
    assert refusal.outcome is Outcome.REFUSED
    before = dump(store)
    store.record_refusal(refusal, "observe", "w", T0)
    store.record_refusal(decide_at(None, Observe("w", 1, {}, T0), T0), "observe", None, T0)
    assert dump(store) == before
    assert count(store, "refusals") == 2


def test_schedules_remember_the_last_discovery(store: Store) -> None:
    """The last discovery time of an automation is kept and overwritten."""
    assert store.last_discovery("auto") is None
    store.set_last_discovery("auto", T0)
    store.set_last_discovery("auto", T0 + S)
    store.set_last_discovery("other", T0)
    assert store.last_discovery("auto") == T0 + S
    assert store.last_discovery("other") == T0


def test_the_event_log_is_append_only(store: Store) -> None:
    """UPDATE and DELETE on events are refused by the database itself."""
    discover(store, "k1")
    before = dump(store)
    for statement in ("UPDATE events SET actor = 'forger'", "DELETE FROM events"):
        with (
            pytest.raises(Exception, match="append-only"),
            raw.writing(store) as cur,
        ):  # around the store's own methods
            cur.execute(statement)
    assert dump(store) == before


def test_current_reads_the_item_its_head_and_its_seal_together(store: Store) -> None:
    """``current`` is ``get`` and ``head`` in one read, including for a missing item and for
    an item whose last event is not the one its row points at."""
    from helpers import insert_by_hand, reconcile_event, stay, stop_in_exception

    assert store.current("nope") == (None, None, None)
    item = stop_in_exception(store, "k", T0)
    stay(store, item, T0 + timedelta(seconds=5))
    head, legacy = store.head(item.id)
    assert head is not None and legacy is None
    assert store.current(item.id) == (store.get(item.id), head, None)
    # an event appended by hand, which the row does not point at: the head is by sequence
    row = store.get(item.id)
    assert row is not None and row.head == head.hash
    extra = reconcile_event(row, T0 + timedelta(seconds=9), "mallory")
    insert_by_hand(store, extra)
    got, got_head, _ = store.current(item.id)
    assert got == store.get(item.id) and got is not None and got.seq == head.seq
    assert got_head == extra == store.head(item.id)[0]
