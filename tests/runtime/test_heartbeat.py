"""A worker's heartbeat measures its steps as a Prometheus histogram: each bucket counts the
steps that took at most its bound (so the buckets only grow from one bound to the next),
``+Inf`` and ``_count`` count every step, ``_sum`` adds their seconds; ``/metrics`` sums the
histograms of every worker's heartbeat. On both stores, with real heartbeat rows."""

from __future__ import annotations

import logging
import re
import sqlite3
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from helpers import T0
from stopline.http import metrics
from stopline.runtime.heartbeat import STEP_BUCKETS, Heartbeat, observe_step
from stopline.runtime.lease import LeaseLost
from stopline.store import Store

FAMILY = "stopline_step_duration_seconds"
SAMPLE = re.compile(r'^(\w+)\{automation="(\w+)"(?:,le="([^"]+)")?\} (\S+)$')


def histogram(text: str, automation: str) -> tuple[dict[str, float], float, float]:
    """``({le: count}, sum, count)`` of the step histogram of ``automation`` in ``text``."""
    buckets: dict[str, float] = {}
    total = count = -1.0
    for line in text.splitlines():
        found = SAMPLE.match(line)
        if found is None or found.group(2) != automation:
            continue
        name, _, le, value = found.groups()
        if name == FAMILY + "_bucket":
            buckets[le] = float(value)
        elif name == FAMILY + "_sum":
            total = float(value)
        elif name == FAMILY + "_count":
            count = float(value)
    return buckets, total, count


def test_step_buckets_count_every_step_at_or_under_their_bound() -> None:
    """Seven steps of one automation, one exactly on a bound, one past the last bound."""
    beat = Heartbeat(store=None, worker="w1", automations=["desk"])  # type: ignore[arg-type]
    taken = [0.004, 0.01, 0.07, 0.3, 0.3, 42.0, 400.0]
    for seconds in taken:
        beat.observe("desk", seconds)
    beat.observe("ops", 0.2)
    stats = beat.stats()
    desk = stats["step_seconds"]["desk"]
    assert desk["buckets"] == [sum(1 for s in taken if s <= b) for b in STEP_BUCKETS]
    assert desk["buckets"][:3] == [2, 2, 3]  # 0.01 counts under le=0.01 (at or under)
    assert desk["buckets"] == sorted(desk["buckets"])
    assert desk["count"] == 7 and desk["sum"] == round(sum(taken), 6)
    assert stats["steps"] == 8 and stats["step_seconds"]["ops"]["count"] == 1


def test_a_step_that_raised_is_measured_too() -> None:
    """A step ended by an exception (its lease lost, the database away) still took its time:
    it is counted, and the exception goes on to the worker."""
    beat = Heartbeat(store=None, worker="w1", automations=["desk"])  # type: ignore[arg-type]
    worker = SimpleNamespace(beat=beat)
    with pytest.raises(LeaseLost), observe_step(worker, "desk", "observing"):  # type: ignore[arg-type]
        raise LeaseLost("itm_1")
    assert beat.stats()["step_seconds"]["desk"]["count"] == 1


def test_metrics_sum_the_histograms_of_every_workers_heartbeat(store: Store) -> None:
    first = Heartbeat(store, "w1", ["desk"])
    second = Heartbeat(store, "w2", ["desk"])
    for seconds in (0.004, 0.3, 42.0):
        first.observe("desk", seconds)
    for seconds in (0.07, 400.0):
        second.observe("desk", seconds)
    first.tick(T0, force=True)
    second.tick(T0 + timedelta(seconds=1), force=True)

    buckets, total, count = histogram(metrics.render(store.insights, T0), "desk")
    taken = [0.004, 0.3, 42.0, 0.07, 400.0]
    assert buckets == {
        **{repr(float(b)): float(sum(1 for s in taken if s <= b)) for b in STEP_BUCKETS},
        "+Inf": 5.0,
    }
    assert count == 5.0
    assert abs(total - sum(taken)) < 1e-6


def test_a_heartbeat_is_written_at_most_once_in_its_period(store: Store) -> None:
    """Ticks within ``BEAT_EVERY`` of the last write leave the row as it was; the first tick
    past it writes the step counts seen since."""
    beat = Heartbeat(store, "w1", ["desk"])
    beat.tick(T0)
    beat.observe("desk", 0.1)
    beat.tick(T0 + timedelta(seconds=4.9))
    [row] = store.heartbeats.workers()
    assert row.seen_at == T0 and row.stats["steps"] == 0
    beat.tick(T0 + timedelta(seconds=5))
    [row] = store.heartbeats.workers()
    assert row.seen_at == T0 + timedelta(seconds=5) and row.stats["steps"] == 1


class Unreachable:
    """A store whose heartbeat writes meet the database away (as a driver reports it)."""

    def __init__(self) -> None:
        self.tries = 0

    @property
    def heartbeats(self) -> Unreachable:
        return self

    def beat(self, *args: Any) -> None:
        self.tries += 1
        raise sqlite3.OperationalError("unable to open database file")


def test_a_heartbeat_the_database_refuses_is_skipped_and_tried_again(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Never fatal: the tick logs a warning and returns; the next tick tries again at once
    (the skipped beat does not count as written), and writes once the database answers."""
    away = Unreachable()
    beat = Heartbeat(away, "w1", ["desk"])  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="stopline.worker"):
        beat.tick(T0)
        beat.tick(T0 + timedelta(seconds=1))
    assert away.tries == 2
    assert [r.getMessage() for r in caplog.records].count(
        "heartbeat of w1 not written (unable to open database file)"
    ) == 2
    beat.store = store
    beat.tick(T0 + timedelta(seconds=2))
    [row] = store.heartbeats.workers()
    assert row.seen_at == T0 + timedelta(seconds=2)
