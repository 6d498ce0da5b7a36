"""`/metrics` read to the value, on SQLite and on PostgreSQL: the families made of the items'
attempt logs, the outbox, the disabled endpoints, the workers' heartbeats, the items by
automation and the age gauges. Each test builds its state through the store's own methods
(and the runtime's heartbeat writer), renders at a fixed time and compares every sample line
of a family, in order."""

from __future__ import annotations

import platform
import re
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import stopline
from helpers import T0, decide_at, discover, event_after, move, stop_in_exception
from stopline.core.commands import Failure
from stopline.core.decision import Decision, Outcome
from stopline.core.policy import RetryPolicy
from stopline.core.records import Item
from stopline.core.states import State
from stopline.http.metrics import render
from stopline.runtime.heartbeat import Heartbeat
from stopline.store import Store
from stopline.store.outbox import AttemptResult, Message, StopBatch

S = timedelta(seconds=1)
# a time with its own microseconds (T0 has 123456): ages keep three decimals of them
NOW = T0 + timedelta(seconds=1000, microseconds=654321)
ONCE = RetryPolicy(max_attempts=1)
GONE = AttemptResult(410, "HTTP 410 Gone", disable=True)


def family(text: str, name: str) -> list[str]:
    """The sample lines of the family ``name`` in ``text``, in the order rendered."""
    sample = re.compile(rf"{re.escape(name)}(_bucket|_sum|_count)?[{{ ]")
    assert f"# TYPE {name} " in text, name
    return [line for line in text.splitlines() if sample.match(line)]


def histogram(name: str, automation: str, buckets: dict[str, int], n: int, total: str) -> list[str]:
    """The lines of one histogram series: its buckets (``le`` to cumulative count), ``+Inf``,
    ``_sum`` and ``_count``."""
    label = f'automation="{automation}"'
    return [
        *(f'{name}_bucket{{{label},le="{le}"}} {c}' for le, c in buckets.items()),
        f'{name}_bucket{{{label},le="+Inf"}} {n}',
        f"{name}_sum{{{label}}} {total}",
        f"{name}_count{{{label}}} {n}",
    ]


def failed_attempt(store: Store, key: str, at: datetime, *, retryable: bool) -> Item:
    """Discover ``key`` (an automation of its own), claim it and record a failure of its step
    through the real core; returns the item as written."""
    discover(store, key, at=at, automation=key)
    item = store.claim("w1", at, 30.0, [key])
    assert item is not None
    command = Failure("w1", item.lease_token, "boom", "it broke", retryable)
    decision = decide_at(item, command, at)
    assert decision.after is not None and store.apply(decision)
    return decision.after


def logged(store: Store, item: Item, at: datetime, *entries: dict[str, Any]) -> Item:
    """Append an event that leaves ``item`` where it is and adds ``entries`` to its attempt
    log (made by hand: the core writes every entry with an outcome; an older one may lack it)."""
    event = event_after(item, at, item.state, "reconcile")
    after = replace(
        item,
        version=item.version + 1,
        seq=event.seq,
        head=event.hash,
        updated_at=at,
        attempt_log=(*item.attempt_log, *entries),
    )
    assert store.apply(Decision(Outcome.APPLIED, (), item.id, item.state, item, after, event))
    return after


def enqueue(store: Store, at: datetime, url: str, *names: str) -> None:
    """Add one message to ``url`` per name, due at ``at``."""
    messages = [Message(f"msg-{n}", n, 1, url, "item.stopped", "{}") for n in names]
    assert store.outbox.enqueue(StopBatch((), at, at), messages, at) == len(names)


def attempt(store: Store, url: str, at: datetime, result: AttemptResult) -> None:
    """Claim the next message to ``url`` and record ``result`` for it."""
    claimed = store.outbox.claim_next(at, 30.0, [url])
    assert claimed is not None
    assert store.outbox.record_attempt(claimed, result, at, ONCE) is not None


# --- the families with nothing to count ------------------------------------------------------


def test_an_empty_store_renders_zeros_where_a_series_is_fixed(store: Store) -> None:
    """A new store: every notification status and both worker statuses at 0, every stop state
    0 s old, no series per attempt outcome, automation, worker, step or endpoint, and the build
    info of this stopline and Python."""
    text = render(store.insights, NOW)
    assert family(text, "stopline_attempts_total") == []
    assert family(text, "stopline_notifications") == [
        'stopline_notifications{status="pending"} 0',
        'stopline_notifications{status="delivered"} 0',
        'stopline_notifications{status="failed"} 0',
    ]
    assert family(text, "stopline_workers") == [
        'stopline_workers{status="live"} 0',
        'stopline_workers{status="stale"} 0',
    ]
    assert family(text, "stopline_stopped_oldest_age_seconds") == [
        f'stopline_stopped_oldest_age_seconds{{state="{state}"}} 0.0'
        for state in (
            "awaiting_approval",
            "exception",
            "exhausted",
            "ready_for_review",
            "revision_failed",
        )
    ]
    for name in (
        "stopline_automation_items",
        "stopline_work_oldest_age_seconds",
        "stopline_worker_heartbeat_age_seconds",
        "stopline_worker_clock_skew_seconds",
        "stopline_step_duration_seconds",
        "stopline_notify_endpoint_disabled",
    ):
        assert family(text, name) == [], name
    python, version = platform.python_version(), stopline.__version__
    assert family(text, "stopline_build_info") == [
        f'stopline_build_info{{python="{python}",version="{version}"}} 1'
    ]
    assert "# TYPE stopline_build_info gauge" in text.splitlines()


# --- attempts --------------------------------------------------------------------------------


def test_attempts_count_every_log_entry_by_outcome(store: Store) -> None:
    """Every entry of every item's attempt log counts once under its outcome; entries without
    one (a missing or null outcome) count as ``unknown``, listed first, the rest by name."""
    failed_attempt(store, "final", T0, retryable=False)
    failed_attempt(store, "again", T0 + S, retryable=True)
    retried = failed_attempt(store, "twice", T0 + 2 * S, retryable=True)
    old = discover(store, "old", at=T0 + 3 * S)
    logged(store, old, T0 + 4 * S, {"attempt": 1}, {"attempt": 2, "outcome": None})
    logged(store, retried, T0 + 5 * S, {"attempt": 2, "outcome": "retry"})
    assert family(render(store.insights, NOW), "stopline_attempts_total") == [
        'stopline_attempts_total{outcome="unknown"} 2',
        'stopline_attempts_total{outcome="failed"} 1',
        'stopline_attempts_total{outcome="retry"} 3',
    ]


# --- notifications and disabled endpoints ----------------------------------------------------


def test_notifications_by_status_and_every_disabled_endpoint(store: Store) -> None:
    """The outbox's messages by status, each status always listed; one series of 1 for each
    endpoint disabled by a 410 (its waiting messages fail with it), gone once it is enabled."""
    a, b, c, e = (f"http://{x}.example/hook" for x in "abce")
    enqueue(store, T0, a, "a1", "a2", "a3", "a4")
    enqueue(store, T0, b, "b1")
    enqueue(store, T0, c, "c1", "c2")
    enqueue(store, T0, e, "e1")
    attempt(store, b, T0 + S, AttemptResult(204, None))
    attempt(store, c, T0 + 2 * S, GONE)  # c2 fails with it, unsent
    attempt(store, e, T0 + 3 * S, GONE)
    text = render(store.insights, NOW)
    assert family(text, "stopline_notifications") == [
        'stopline_notifications{status="pending"} 4',
        'stopline_notifications{status="delivered"} 1',
        'stopline_notifications{status="failed"} 3',
    ]
    assert family(text, "stopline_notify_endpoint_disabled") == [
        f'stopline_notify_endpoint_disabled{{endpoint="{c}"}} 1',
        f'stopline_notify_endpoint_disabled{{endpoint="{e}"}} 1',
    ]
    assert store.outbox.enable_endpoint(c)
    again = render(store.insights, NOW)
    assert family(again, "stopline_notify_endpoint_disabled") == [
        f'stopline_notify_endpoint_disabled{{endpoint="{e}"}} 1'
    ]
    assert family(again, "stopline_notifications")[2] == 'stopline_notifications{status="failed"} 3'


# --- workers ---------------------------------------------------------------------------------


def test_workers_are_live_up_to_fifteen_seconds_and_each_shows_its_age(store: Store) -> None:
    """A worker last seen exactly 15 s ago is live, one seen 15.001 s ago stale; each worker's
    age is in seconds, three decimals, and a heartbeat from a clock ahead is 0 s old. Ages
    are listed by the most recent heartbeat first."""
    beats = store.heartbeats
    for worker, host, seen in (
        ("w-edge", "h1", NOW - 15 * S),
        ("w-old", "h1", NOW - timedelta(seconds=15, microseconds=1000)),
        ("w-new", "h2", NOW - timedelta(seconds=2, microseconds=345678)),
        ("w-ahead", "h3", NOW + 3 * S),
    ):
        beats.beat(worker, host, 7, ["ops"], T0, seen, {"steps": 0})
    text = render(store.insights, NOW)
    assert family(text, "stopline_workers") == [
        'stopline_workers{status="live"} 3',
        'stopline_workers{status="stale"} 1',
    ]
    name = "stopline_worker_heartbeat_age_seconds"
    assert family(text, name) == [
        f'{name}{{host="h3",worker="w-ahead"}} 0.0',
        f'{name}{{host="h2",worker="w-new"}} 2.346',
        f'{name}{{host="h1",worker="w-edge"}} 15.0',
        f'{name}{{host="h1",worker="w-old"}} 15.001',
    ]
    later = render(store.insights, NOW + 18 * S)  # w-ahead is now exactly 15 s old
    assert family(later, "stopline_workers") == [
        'stopline_workers{status="live"} 1',
        'stopline_workers{status="stale"} 3',
    ]


def test_a_workers_clock_skew_is_exported_when_its_heartbeat_carries_one(store: Store) -> None:
    """A worker on PostgreSQL measures its clock against the server's; the gauge is what its
    last heartbeat said (none for a worker that never measured, as on SQLite)."""
    beats = store.heartbeats
    beats.beat(
        "w-off", "h1", 7, ["ops"], T0, NOW, {"steps": 0, "clock_skew": 42.5, "clock_off": True}
    )
    beats.beat("w-on", "h2", 7, ["ops"], T0, NOW, {"steps": 0, "clock_skew": -0.004})
    beats.beat("w-lite", "h3", 7, ["ops"], T0, NOW, {"steps": 0})
    name = "stopline_worker_clock_skew_seconds"
    assert family(render(store.insights, NOW), name) == [
        f'{name}{{host="h1",worker="w-off"}} 42.5',
        f'{name}{{host="h2",worker="w-on"}} -0.004',
    ]


def test_step_durations_are_summed_over_every_workers_heartbeat(store: Store) -> None:
    """The step histograms the workers' heartbeats carry are added up by automation: cumulative
    buckets (a step on a bound counts in it), ``+Inf`` and ``_count`` the steps, ``_sum`` their
    seconds to six decimals. A histogram with other buckets (another version's) is left out."""
    beat = Heartbeat(store, "w1", ["ops", "web"])
    beat.observe("ops", 0.0078125)
    beat.observe("ops", 0.25)
    beat.observe("web", 7.0)
    beat.tick(T0, force=True)
    last_bucket = [0] * 11 + [1]
    other = {"buckets": last_bucket, "count": 1, "sum": 299.1234567}
    stats: dict[str, Any] = {"steps": 1, "step_seconds": {"ops": other}}
    store.heartbeats.beat("w2", "h2", 8, ["ops"], T0, T0 + S, stats)
    older = {"ops": {"buckets": [5, 5], "count": 5, "sum": 9.0}}
    store.heartbeats.beat("w3", "h3", 9, ["ops"], T0, T0 + 2 * S, {"step_seconds": older})
    bounds = [
        "0.01",
        "0.05",
        "0.1",
        "0.25",
        "0.5",
        "1.0",
        "2.5",
        "5.0",
        "10.0",
        "30.0",
        "60.0",
        "300.0",
    ]
    ops = dict(zip(bounds, (1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3), strict=True))
    web = dict(zip(bounds, (0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1), strict=True))
    name = "stopline_step_duration_seconds"
    # 0.0078125 + 0.25 is 0.257812 in the heartbeat (six decimals); 299.3812687 is rounded here
    assert family(render(store.insights, NOW), name) == [
        *histogram(name, "ops", ops, 3, "299.381269"),
        *histogram(name, "web", web, 1, "7.0"),
    ]


# --- items by automation, and how old the oldest are ----------------------------------------


def test_items_by_automation_and_the_age_of_the_oldest_stopped_and_working(store: Store) -> None:
    """Items by automation and state; for each stop state the age of its oldest item (any
    automation, 0 when none) and, by automation, for each work state that holds items: in
    seconds since the item's last change, three decimals. An item changed after ``now`` (a
    clock behind) is 0 s old."""
    stop_in_exception(store, "c", T0 + 20 * S, automation="ops")  # before any other is due
    stop_in_exception(store, "d", T0 + 30 * S, automation="web")
    discover(store, "a", at=T0, automation="ops")
    discover(store, "b", at=T0 + 10 * S, automation="ops")
    e = discover(store, "e", at=T0 + 5 * S, automation="web")
    move(store, e, T0 + 40 * S, State.APPROVED, "propose")
    f = discover(store, "f", at=T0 + 6 * S, automation="web")
    move(store, f, T0 + 50 * S, State.COMPLETED, "readback")
    g = discover(store, "g", at=T0 + 7 * S, automation="web")
    move(store, g, T0 + 60 * S, State.EXHAUSTED, "failure")
    text = render(store.insights, NOW)
    items = "stopline_automation_items"
    assert family(text, items) == [
        f'{items}{{automation="ops",state="exception"}} 1',
        f'{items}{{automation="ops",state="observing"}} 2',
        f'{items}{{automation="web",state="approved"}} 1',
        f'{items}{{automation="web",state="completed"}} 1',
        f'{items}{{automation="web",state="exception"}} 1',
        f'{items}{{automation="web",state="exhausted"}} 1',
    ]
    stopped = "stopline_stopped_oldest_age_seconds"
    assert family(text, stopped) == [
        f'{stopped}{{state="awaiting_approval"}} 0.0',
        f'{stopped}{{state="exception"}} 980.654',
        f'{stopped}{{state="exhausted"}} 940.654',
        f'{stopped}{{state="ready_for_review"}} 0.0',
        f'{stopped}{{state="revision_failed"}} 0.0',
    ]
    work = "stopline_work_oldest_age_seconds"
    assert family(text, work) == [
        f'{work}{{automation="ops",state="observing"}} 1000.654',
        f'{work}{{automation="web",state="approved"}} 960.654',
    ]
    early = render(store.insights, T0 + 25 * S)
    assert family(early, stopped)[1:3] == [
        f'{stopped}{{state="exception"}} 5.0',
        f'{stopped}{{state="exhausted"}} 0.0',
    ]
    assert family(early, work) == [
        f'{work}{{automation="ops",state="observing"}} 25.0',
        f'{work}{{automation="web",state="approved"}} 0.0',
    ]


# --- time to decision, and revisions -------------------------------------------------------


def test_time_to_decision_lists_every_bound_and_counts_a_span_on_one_in_it(store: Store) -> None:
    """Every bound of the time-to-decision histogram, from a minute to a week; a span exactly
    on a bound counts in it, and one whose deciding event carries an earlier time than the
    stop (a clock behind) counts as 0 s."""
    for n, seconds in enumerate((0, 900, 7 * 86400, -5)):
        at = T0 + n * S
        stopped = stop_in_exception(store, f"k{n}", at, automation="ops")
        move(store, stopped, at + seconds * S, State.CLOSED)
    name = "stopline_time_to_decision_seconds"
    bounds = ["60.0", "300.0", "900.0", "3600.0", "14400.0", "86400.0", "259200.0", "604800.0"]
    counts = dict(zip(bounds, (2, 2, 3, 3, 3, 3, 3, 4), strict=True))
    assert family(render(store.insights, NOW), name) == histogram(
        name, "ops", counts, 4, "605700.0"
    )


def test_a_failed_revision_counts_once_however_often_it_is_reconciled(store: Store) -> None:
    """A revision fails when an item enters ``revision_failed``; events that leave it there
    are not more failures."""
    item = discover(store, "r", at=T0)
    item = move(store, item, T0 + S, State.REVISION_PREPARED, "revise")
    item = move(store, item, T0 + 2 * S, State.REVISION_FAILED, "readback")
    for n in (3, 4):
        item = move(store, item, T0 + n * S, State.REVISION_FAILED, "reconcile")
    assert family(render(store.insights, NOW), "stopline_revisions_total") == [
        'stopline_revisions_total{outcome="opened"} 1',
        'stopline_revisions_total{outcome="completed"} 0',
        'stopline_revisions_total{outcome="failed"} 1',
    ]
