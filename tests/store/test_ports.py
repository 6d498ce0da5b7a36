"""The insights and outbox ports: one conformance suite, run on SQLite and on PostgreSQL."""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import T0, decide_at, discover, dump, move, stay, stop_in_exception
from stopline.core.commands import Failure, NeedsEyes
from stopline.core.decision import Outcome
from stopline.core.policy import Policy, RetryPolicy
from stopline.core.records import Item
from stopline.core.states import State
from stopline.http.metrics import render
from stopline.store import Store, open_store
from stopline.store.insights import StateCount
from stopline.store.outbox import (
    DELIVERED,
    FAILED,
    PENDING,
    AttemptResult,
    Message,
    StopBatch,
    after_attempt,
    message_id,
)

S = timedelta(seconds=1)
LOOKBACK = timedelta(minutes=10)
OK = AttemptResult(204, None)
DOWN = AttemptResult(500, "HTTP 500")
RETRY = RetryPolicy(max_attempts=3, base_delay=10.0, backoff=2.0, max_delay=3600.0)


def claimed(store: Store, at: datetime) -> Item:
    item = store.claim("w1", at, 30.0)
    assert item is not None
    return item


def failure(store: Store, key: str, at: datetime, *, retryable: bool, policy: Policy) -> Item:
    discover(store, key, at=at, policy=policy)
    item = claimed(store, at)
    command = Failure("w1", item.lease_token, "boom", "it broke", retryable)
    decision = decide_at(item, command, at, policy)
    assert decision.after is not None and store.apply(decision)
    return decision.after


URLS = ["http://r.example/hook"]  # the endpoints the sender in these tests has configured


def message(event_item: str, seq: int, url: str = "http://r.example/hook") -> Message:
    return Message(f"msg-{event_item}-{seq}-{url}", event_item, seq, url, "item.stopped", "{}")


def fill(store: Store, now: datetime, *ids: str) -> None:
    """Enqueue one message per id (made up, not from events), due at ``now``."""
    batch = StopBatch((), now, now)
    added = store.outbox.enqueue(batch, [message(i, 1) for i in ids], now)
    assert added == len(ids)


# --- insights --------------------------------------------------------------------------------


def test_insights_of_an_empty_store(store: Store) -> None:
    """A new store has no counts, no outcomes, no notifications and no automations."""
    insights = store.insights
    assert insights.count_by_state() == []
    assert insights.transition_counts() == []
    assert insights.refusal_counts() == []
    assert insights.attempt_outcomes() == {}
    assert insights.notification_counts() == {}
    assert insights.automation_names() == []


def test_insights_agree_with_the_items_and_their_histories(store: Store) -> None:
    """Counts by state, by transition and by attempt outcome equal what the items and their
    event logs say, on each store."""
    one = Policy(retry=RetryPolicy(max_attempts=1))
    stop_in_exception(store, "a", T0)
    stop_in_exception(store, "b", T0 + S)
    failure(store, "c", T0 + 2 * S, retryable=False, policy=Policy())
    failure(store, "d", T0 + 3 * S, retryable=True, policy=Policy())
    failure(store, "e", T0 + 4 * S, retryable=True, policy=one)
    discover(store, "f", at=T0 + 5 * S)
    items = store.list_items()
    histories = [store.history(i.id) for i in items]

    by_state: dict[str, list[Item]] = {}
    for item in items:
        by_state.setdefault(item.state.value, []).append(item)
    assert store.insights.count_by_state() == [
        StateCount(state, len(found), min(i.updated_at for i in found))
        for state, found in sorted(by_state.items())
    ]
    assert {c.state for c in store.insights.count_by_state()} >= {"exception", "failed"}

    expected = Counter(
        (e.command, e.from_state and e.from_state.value, e.to_state.value, e.reasons)
        for events in histories
        for e in events
    )
    found = {
        (t.command, t.from_state, t.to_state, t.reasons): t.count
        for t in store.insights.transition_counts()
    }
    assert found == dict(expected)
    assert found[("discover", None, "observing", ())] == 6

    outcomes = Counter(entry.get("outcome") for i in items for entry in i.attempt_log)
    assert store.insights.attempt_outcomes() == dict(outcomes)
    assert sum(outcomes.values()) == 5 and len(outcomes) >= 3  # a..e each ended an attempt


def test_refusal_counts_group_by_command_and_reasons(store: Store) -> None:
    """Refusals are counted by command and by their exact reason codes."""
    item = discover(store, "k1")
    stale = decide_at(item, NeedsEyes("w", 99, "ops", "x"), T0)
    assert stale.outcome is Outcome.REFUSED
    store.record_refusal(stale, "needs_eyes", "w", T0)
    store.record_refusal(stale, "needs_eyes", "w", T0 + S)
    store.record_refusal(stale, "observe", None, T0)
    counts = {(r.command, r.reasons): r.count for r in store.insights.refusal_counts()}
    assert counts == {("needs_eyes", stale.reasons): 2, ("observe", stale.reasons): 1}


def test_automation_names_are_listed_in_order(store: Store) -> None:
    """Every registered automation is listed once, by name."""
    for name in ("zeta", "alpha", "mid"):
        store.register_automation(name, Policy(), T0)
    store.register_automation("alpha", Policy(), T0 + S)
    assert store.insights.automation_names() == ["alpha", "mid", "zeta"]


def test_stop_spans_run_from_entering_a_stop_to_the_event_that_moves_it_on(store: Store) -> None:
    """A span per stop that was left: from the event that entered the stop state to the first
    later event into another state. An event that leaves the item where it is does not end
    it, an item still stopped has none, and an item that stops again has a second one. The
    metrics' time-to-decision histogram is made of them, by automation."""
    a = stop_in_exception(store, "a", T0, automation="ops")
    stay(store, a, T0 + S)
    stayed = store.get(a.id)
    assert stayed is not None
    move(store, stayed, T0 + 90 * S, State.CLOSED)
    stop_in_exception(store, "b", T0 + 2 * S, automation="ops")  # still stopped
    c = stop_in_exception(store, "c", T0, automation="web")
    c = move(store, c, T0 + 10 * S, State.OBSERVING)
    c = move(store, c, T0 + 20 * S, State.EXCEPTION)
    move(store, c, T0 + 4000 * S, State.CLOSED)
    spans = sorted((s.automation, s.stopped_at, s.decided_at) for s in store.insights.stop_spans())
    assert spans == [
        ("ops", T0, T0 + 90 * S),
        ("web", T0, T0 + 10 * S),
        ("web", T0 + 20 * S, T0 + 4000 * S),
    ]
    text = render(store.insights, T0 + 5000 * S)
    name = "stopline_time_to_decision_seconds"
    for line in (
        f'{name}_bucket{{automation="ops",le="60.0"}} 0',
        f'{name}_bucket{{automation="ops",le="300.0"}} 1',
        f'{name}_bucket{{automation="ops",le="+Inf"}} 1',
        f'{name}_sum{{automation="ops"}} 90.0',
        f'{name}_count{{automation="ops"}} 1',
        f'{name}_bucket{{automation="web",le="60.0"}} 1',
        f'{name}_bucket{{automation="web",le="3600.0"}} 1',
        f'{name}_bucket{{automation="web",le="14400.0"}} 2',
        f'{name}_sum{{automation="web"}} 3990.0',
        f'{name}_count{{automation="web"}} 2',
    ):
        assert line in text.splitlines(), line


def test_the_metrics_count_what_the_events_and_refusals_record(store: Store) -> None:
    """Each counter of `/metrics` from the events and refusals of a real store: decisions and
    their reason codes by command, exhaustions, deliveries by outcome, readback mismatches and
    revisions; an event that leaves an item where it is counts as a decision only."""
    at = iter(T0 + n * S for n in range(1, 100))
    one = discover(store, "one")
    for command, to, reasons in (
        ("propose", State.APPROVED, ()),
        ("execute", State.DELIVERING, ()),
        ("delivered", State.PENDING_READBACK, ()),
        ("readback", State.EXCEPTION, ("readback_mismatch",)),
        ("resolve", State.PENDING_READBACK, ()),
        ("readback", State.COMPLETED, ()),
        ("revise", State.REVISION_PREPARED, ()),
        ("delivered", State.PENDING_READBACK, ()),
        ("readback", State.REVISION_COMPLETED, ()),
        ("revise", State.REVISION_PREPARED, ()),
        ("readback", State.REVISION_FAILED, ("readback_mismatch", "remote_identity_missing")),
        ("reconcile", State.REVISION_FAILED, ()),
    ):
        one = move(store, one, next(at), to, command, reasons)
    two = discover(store, "two")
    for command, to in (
        ("failure", State.EXHAUSTED),
        ("resume", State.OBSERVING),
        ("failure", State.EXHAUSTED),
        ("reconcile", State.EXHAUSTED),
    ):
        two = move(store, two, next(at), to, command, ("retry_budget_spent",))
    stale = decide_at(two, NeedsEyes("w", 99, "ops", "x"), T0)
    assert stale.outcome is Outcome.REFUSED
    store.record_refusal(stale, "needs_eyes", "w", T0)
    store.record_refusal(stale, "needs_eyes", "w", T0 + S)
    lines = render(store.insights, T0 + 200 * S).splitlines()
    for line in (
        'stopline_decisions_total{command="discover",kind="applied"} 2',
        'stopline_decisions_total{command="readback",kind="applied"} 4',
        'stopline_decisions_total{command="reconcile",kind="applied"} 2',
        'stopline_decisions_total{command="needs_eyes",kind="refused"} 2',
        'stopline_decision_reasons_total{command="readback",kind="applied",'
        'reason="readback_mismatch"} 2',
        'stopline_decision_reasons_total{command="failure",kind="applied",'
        'reason="retry_budget_spent"} 2',
        "stopline_exhaustions_total 2",
        'stopline_deliveries_total{outcome="delivered"} 2',
        'stopline_deliveries_total{outcome="completed"} 1',
        'stopline_deliveries_total{outcome="revision_completed"} 1',
        "stopline_readback_mismatches_total 2",
        'stopline_revisions_total{outcome="opened"} 2',
        'stopline_revisions_total{outcome="completed"} 1',
        'stopline_revisions_total{outcome="failed"} 1',
        'stopline_items{state="revision_failed",state_class="stop"} 1',
        'stopline_items{state="exhausted",state_class="stop"} 1',
        'stopline_items{state="completed",state_class="terminal"} 0',
    ):
        assert line in lines, line
    refused = [x for x in lines if x.startswith("stopline_decision_reasons_total{")]
    assert any('kind="refused"' in x and 'command="needs_eyes"' in x for x in refused)


# --- the outbox: filling ---------------------------------------------------------------------


def test_only_stops_after_the_switch_on_are_read(store: Store) -> None:
    """The first read starts at ``now - backfill``: older stops are not sent, and later
    stops are read with everything a message needs."""
    stop_in_exception(store, "old", T0, automation="ops")
    first = store.outbox.new_stops(T0 + S, 0.0, LOOKBACK)
    assert (first.events, first.start, first.cursor) == ((), T0 + S, T0 + S)
    assert store.outbox.enqueue(first, [], T0 + S) == 0
    stopped = stop_in_exception(store, "new", T0 + 2 * S, automation="ops")
    batch = store.outbox.new_stops(T0 + 3 * S, 0.0, LOOKBACK)
    [event] = batch.events
    assert (event.item_id, event.automation, event.key, event.seq) == (
        stopped.id,
        "ops",
        "new",
        stopped.seq,
    )
    assert (event.at, event.command, event.from_state, event.to_state) == (
        T0 + 2 * S,
        "needs_eyes",
        "observing",
        "exception",
    )
    assert event.reasons == store.history(stopped.id)[-1].reasons
    assert (batch.start, batch.cursor) == (T0 + S, T0 + 2 * S)


def test_backfill_reads_older_stops_on_the_first_round(store: Store) -> None:
    """With a backfill the first read also returns stops that many seconds old."""
    stop_in_exception(store, "old", T0)
    batch = store.outbox.new_stops(T0 + 10 * S, 60.0, LOOKBACK)
    assert [e.key for e in batch.events] == ["old"]
    assert batch.start == T0 + 10 * S - 60 * S


def test_only_entries_into_a_stop_state_are_read(store: Store) -> None:
    """Events into work or terminal states, and events that leave a stopped item where it
    was, are not stops."""
    fill(store, T0 - S)  # switches notifications on before everything below
    store.outbox.enqueue(store.outbox.new_stops(T0 - S, 0.0, LOOKBACK), [], T0 - S)
    stopped = stop_in_exception(store, "a", T0)
    stay(store, stopped, T0 + S)
    failure(store, "c", T0 + 2 * S, retryable=False, policy=Policy())
    failure(store, "d", T0 + 3 * S, retryable=True, policy=Policy())
    batch = store.outbox.new_stops(T0 + 4 * S, 0.0, LOOKBACK)
    assert [(e.key, e.seq, e.to_state) for e in batch.events] == [("a", stopped.seq, "exception")]
    assert batch.cursor == T0  # the newest stop seen; the rest are not stops


def test_enqueue_adds_each_message_once_and_moves_the_cursor(store: Store) -> None:
    """Enqueueing the same messages again adds nothing; the cursor moves to the newest stop,
    and stops within the lookback are read again (and added once)."""
    store.outbox.enqueue(store.outbox.new_stops(T0 - S, 0.0, LOOKBACK), [], T0 - S)
    stopped = stop_in_exception(store, "a", T0)
    batch = store.outbox.new_stops(T0 + S, 0.0, LOOKBACK)
    messages = [message(stopped.id, stopped.seq, u) for u in ("http://a/hook", "http://b/hook")]
    assert store.outbox.enqueue(batch, messages, T0 + S) == 2
    assert store.outbox.enqueue(batch, messages, T0 + 2 * S) == 0
    again = store.outbox.new_stops(T0 + 3 * S, 0.0, LOOKBACK)
    assert [e.key for e in again.events] == ["a"]  # within the lookback of the cursor
    assert again.cursor == T0
    assert store.outbox.new_stops(T0 + 3 * S, 0.0, timedelta(0)).events == ()
    listed = store.outbox.notifications()
    assert [(n.id, n.status, n.attempts, n.next_attempt_at) for n in listed] == [
        (m.id, PENDING, 0, T0 + S) for m in sorted(messages, key=lambda m: m.id)
    ]
    assert listed[0].created_at == T0 + S and listed[0].delivered_at is None
    assert store.outbox.count_by_status() == {PENDING: 2}
    assert store.insights.notification_counts() == {PENDING: 2}


def test_a_late_commit_is_read_within_the_lookback(store: Store) -> None:
    """A stop whose event time is older than the cursor is still read while within the
    lookback, and never beyond it."""
    store.outbox.enqueue(store.outbox.new_stops(T0 - S, 0.0, LOOKBACK), [], T0 - S)
    stop_in_exception(store, "on-time", T0 + 30 * S)
    batch = store.outbox.new_stops(T0 + 31 * S, 0.0, LOOKBACK)
    store.outbox.enqueue(batch, [], T0 + 31 * S)
    stop_in_exception(store, "late", T0 + 5 * S)  # decided earlier, committed after the read
    wide = store.outbox.new_stops(T0 + 32 * S, 0.0, timedelta(seconds=60))
    assert sorted(e.key for e in wide.events) == ["late", "on-time"]
    narrow = store.outbox.new_stops(T0 + 32 * S, 0.0, timedelta(seconds=10))
    assert [e.key for e in narrow.events] == ["on-time"]


# --- the outbox: sending ---------------------------------------------------------------------


def test_a_claim_leases_one_message_to_one_sender(store: Store) -> None:
    """Claims take the most overdue message first, never one under a live lease, and take
    it back once the lease has run out."""
    fill(store, T0, "m1")
    fill(store, T0 + S, "m2")
    first = store.outbox.claim_next(T0 + 2 * S, 30.0, URLS)
    second = store.outbox.claim_next(T0 + 2 * S, 30.0, URLS)
    assert first is not None and second is not None
    assert (first.item_id, second.item_id) == ("m1", "m2")
    assert first.next_attempt_at == T0 + 32 * S
    assert store.outbox.claim_next(T0 + 2 * S, 30.0, URLS) is None
    assert store.outbox.claim_next(T0 + 31 * S, 30.0, URLS) is None
    again = store.outbox.claim_next(T0 + 32 * S, 30.0, URLS)
    assert again is not None and again.id == first.id


def test_a_claim_without_a_lease_is_refused_and_claims_nothing(store: Store) -> None:
    """A lease of zero or fewer seconds is a caller's mistake: refused before any write."""
    fill(store, T0, "m1")
    for seconds in (0.0, -1.0):
        with pytest.raises(ValueError, match="positive"):
            store.outbox.claim_next(T0 + S, seconds, URLS)
    claimed = store.outbox.claim_next(T0 + S, 30.0, URLS)
    assert claimed is not None and claimed.attempts == 0


def test_a_message_id_names_one_event_and_one_endpoint() -> None:
    """The same event and URL give the same id (a message made twice is one message); any
    other item, event or URL another one."""
    made = message_id("itm_a", 3, "http://r.example/hook")
    assert made == message_id("itm_a", 3, "http://r.example/hook")
    assert re.fullmatch(r"msg_[0-9a-f]{32}", made)
    others = {
        message_id("itm_b", 3, "http://r.example/hook"),
        message_id("itm_a", 4, "http://r.example/hook"),
        message_id("itm_a", 3, "http://r.example/other"),
    }
    assert made not in others and len(others) == 3


def test_only_the_lease_holder_records_an_outcome(store: Store) -> None:
    """A sender whose lease ran out and was taken over records nothing; the new holder
    records its attempt."""
    fill(store, T0, "m1")
    slow = store.outbox.claim_next(T0, 30.0, URLS)
    assert slow is not None
    taken = store.outbox.claim_next(T0 + 31 * S, 30.0, URLS)
    assert taken is not None
    before = dump(store)
    assert store.outbox.record_attempt(slow, OK, T0 + 40 * S, RETRY) is None
    assert dump(store) == before
    done = store.outbox.record_attempt(taken, OK, T0 + 41 * S, RETRY)
    assert done is not None and (done.status, done.attempts) == (DELIVERED, 1)
    [stored] = store.outbox.notifications()
    assert stored == done
    assert stored.delivered_at == T0 + 41 * S
    [attempt] = store.outbox.attempts(taken.id)
    assert (attempt.attempt, attempt.at, attempt.status_code, attempt.error) == (
        1,
        T0 + 41 * S,
        204,
        None,
    )
    assert store.outbox.record_attempt(taken, OK, T0 + 42 * S, RETRY) is None  # recorded once


def test_failed_attempts_back_off_then_fail_for_good(store: Store) -> None:
    """Each failed attempt is recorded and the message waits 10 s, then 20 s; the third
    failure of three allowed marks it failed, and it is never claimed again."""
    fill(store, T0, "m1")
    now = T0
    for attempt, wait in ((1, 10), (2, 20)):
        claimed_message = store.outbox.claim_next(now, 30.0, URLS)
        assert claimed_message is not None
        recorded = store.outbox.record_attempt(claimed_message, DOWN, now, RETRY)
        assert recorded is not None
        assert (recorded.status, recorded.attempts) == (PENDING, attempt)
        assert recorded.next_attempt_at == now + wait * S
        assert store.outbox.claim_next(now + (wait - 1) * S, 30.0, URLS) is None
        now += wait * S
    last = store.outbox.claim_next(now, 30.0, URLS)
    assert last is not None
    recorded = store.outbox.record_attempt(last, AttemptResult(None, "refused"), now, RETRY)
    assert recorded is not None and (recorded.status, recorded.last_error) == (FAILED, "refused")
    assert store.outbox.claim_next(now + 3600 * S, 30.0, URLS) is None
    assert [(a.attempt, a.status_code, a.error) for a in store.outbox.attempts(last.id)] == [
        (1, 500, "HTTP 500"),
        (2, 500, "HTTP 500"),
        (3, None, "refused"),
    ]
    assert [n.status for n in store.outbox.notifications(status=FAILED)] == [FAILED]
    assert store.outbox.notifications(status=PENDING) == []
    assert store.insights.notification_counts() == {FAILED: 1}


def test_concurrent_claims_on_two_connections_never_share_a_message(store_url: str) -> None:
    """Four threads on two stores claim until nothing is due: every message is taken by
    exactly one of them."""
    stores = [open_store(store_url), open_store(store_url)]
    try:
        ids = [f"m{n:02d}" for n in range(40)]
        fill(stores[0], T0, *ids)
        taken: list[str] = []
        lock = threading.Lock()
        start = threading.Barrier(4)

        def claimer(store: Store) -> None:
            start.wait()
            while (got := store.outbox.claim_next(T0 + S, 30.0, URLS)) is not None:
                with lock:
                    taken.append(got.item_id)

        threads = [threading.Thread(target=claimer, args=(s,)) for s in stores * 2]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(taken) == ids
    finally:
        for s in stores:
            s.close()


@given(
    attempt=st.integers(min_value=1, max_value=20),
    max_attempts=st.integers(min_value=1, max_value=20),
    accepted=st.booleans(),
)
def test_after_attempt_is_the_one_retry_rule(
    attempt: int, max_attempts: int, accepted: bool
) -> None:
    """Accepted is delivered; a failure is final exactly when the budget is spent, and
    otherwise waits the retry policy's delay."""
    retry = replace(RETRY, max_attempts=max_attempts)
    result = OK if accepted else DOWN
    status, next_at = after_attempt(attempt, result, T0, retry)
    if accepted:
        assert (status, next_at) == (DELIVERED, T0)
    elif attempt >= max_attempts:
        assert (status, next_at) == (FAILED, T0)
    else:
        assert (status, next_at) == (PENDING, T0 + retry.delay(attempt))
        assert next_at > T0


def test_a_claim_takes_only_messages_to_the_senders_endpoints(store: Store) -> None:
    """A message to a URL the sender has not configured is never claimed by it."""
    batch = StopBatch((), T0, T0)
    store.outbox.enqueue(batch, [message("a", 1, "http://elsewhere.example/")], T0)
    assert store.outbox.claim_next(T0 + S, 30.0, URLS) is None
    got = store.outbox.claim_next(T0 + S, 30.0, ["http://elsewhere.example/"])
    assert got is not None and got.item_id == "a"


def test_a_gone_endpoint_is_disabled_with_its_waiting_messages(store: Store) -> None:
    """An attempt that disables its endpoint fails the message and every other message still
    waiting for that endpoint, and records the endpoint; enabling it clears the record."""
    fill(store, T0, "m1", "m2")
    claimed = store.outbox.claim_next(T0 + S, 30.0, URLS)
    assert claimed is not None
    gone = AttemptResult(410, "HTTP 410 Gone", disable=True)
    recorded = store.outbox.record_attempt(claimed, gone, T0 + 2 * S, RETRY)
    assert recorded is not None and recorded.status == FAILED
    assert {n.status for n in store.outbox.notifications()} == {FAILED}
    [disabled] = store.outbox.disabled_endpoints()
    assert disabled.url == URLS[0] and "410" in disabled.reason
    assert store.insights.disabled_endpoints() == [disabled]
    assert store.outbox.enable_endpoint(URLS[0]) and not store.outbox.enable_endpoint(URLS[0])
    assert store.outbox.disabled_endpoints() == []


def test_heartbeats_are_one_row_per_worker(store: Store) -> None:
    """A worker's beats update its one row; old rows can be dropped."""
    beats = store.heartbeats
    beats.beat("w1", "h", 10, ["b", "a"], T0, T0, {"steps": 0})
    beats.beat("w1", "h", 10, ["b", "a"], T0, T0 + 5 * S, {"steps": 3})
    beats.beat("w2", "h", 11, ["a"], T0, T0 + S, {"steps": 1})
    [first, second] = store.insights.workers()
    assert (first.worker, first.automations, first.stats["steps"]) == ("w1", ("a", "b"), 3)
    assert first.seen_at == T0 + 5 * S and first.started_at == T0
    assert first.to_plain(T0 + 6 * S)["age_seconds"] == 1.0 and second.worker == "w2"
    assert beats.forget(T0 + 2 * S) == 1
    assert [b.worker for b in beats.workers()] == ["w1"]
