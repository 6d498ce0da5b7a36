"""``/metrics`` in the Prometheus text format (version 0.0.4).

Every series is an aggregate: labels carry states, commands, reason codes, outcomes and
automation names, never an item id or key. Worker measurements (live workers, step
durations) come from the workers' heartbeats, so one scrape of ``serve`` sees every worker
process on the database.
"""

from __future__ import annotations

import platform
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from .. import __version__
from ..core.states import STOP_STATES, State
from ..runtime.heartbeat import LIVE_AFTER, STEP_BUCKETS
from ..store import NOTIFICATION_STATUSES, Insights

DECISION_BUCKETS = (60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 86400.0, 3 * 86400.0, 7 * 86400.0)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _label(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Family:
    def __init__(self, name: str, kind: str, help: str) -> None:
        self.name, self.kind, self.help = name, kind, help
        self.samples: list[tuple[dict[str, Any], float]] = []

    def add(self, value: float, **labels: Any) -> None:
        self.samples.append((labels, value))

    def render(self) -> str:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}"]
        for labels, value in self.samples:
            name = self.name
            if self.kind == "histogram":
                name += labels.get("__suffix", "_bucket")
            shown_labels = {k: v for k, v in labels.items() if k != "__suffix"}
            inner = ",".join(f'{k}="{_label(v)}"' for k, v in sorted(shown_labels.items()))
            shown = repr(float(value)) if isinstance(value, float) else str(value)
            lines.append(f"{name}{{{inner}}} {shown}" if inner else f"{name} {shown}")
        return "\n".join(lines)


def _items(insights: Insights, now: datetime) -> list[Family]:
    by_state = Family("stopline_items", "gauge", "Items by state.")
    oldest = Family(
        "stopline_stopped_oldest_age_seconds",
        "gauge",
        "Age of the oldest item in each stop state (0 when none), since its last change.",
    )
    counts = {row.state: row for row in insights.count_by_state()}
    for state in State:
        row = counts.get(state.value)
        by_state.add(
            row.count if row else 0, state=state.value, state_class=state.state_class.value
        )
    for state in sorted(STOP_STATES):
        row = counts.get(state.value)
        age = (now - row.oldest).total_seconds() if row and row.oldest else 0.0
        oldest.add(round(max(age, 0.0), 3), state=state.value)
    return [by_state, oldest]


def _events(insights: Insights) -> list[Family]:
    applied = Family(
        "stopline_decisions_total",
        "counter",
        "Decisions by kind: applied ones are events (by command), refused ones are audited "
        "refusals (by command). Zero-write decisions are not recorded.",
    )
    reasons = Family(
        "stopline_decision_reasons_total",
        "counter",
        "Reason codes named by decisions, by kind and command (a decision may name several).",
    )
    exhaustions = Family(
        "stopline_exhaustions_total", "counter", "Items that spent their retry budget."
    )
    deliveries = Family(
        "stopline_deliveries_total",
        "counter",
        "Delivery outcomes: delivered (all remote calls made), completed and revision_completed "
        "(read back and verified).",
    )
    mismatches = Family(
        "stopline_readback_mismatches_total", "counter", "Readbacks that did not match."
    )
    revisions = Family(
        "stopline_revisions_total", "counter", "Revisions opened, completed and failed."
    )
    by_command: Counter[str] = Counter()
    by_reason: Counter[tuple[str, str]] = Counter()
    exhausted = delivered = mismatched = 0
    done: Counter[str] = Counter()
    revised: Counter[str] = Counter()
    for row in insights.transition_counts():
        n, codes = row.count, row.reasons
        command, to_state, from_state = row.command, row.to_state, row.from_state
        by_command[command] += n
        for code in codes:
            by_reason[(command, code)] += n
        if to_state == State.EXHAUSTED and from_state != State.EXHAUSTED:
            exhausted += n
        if command == "delivered":
            delivered += n
        if to_state in (State.COMPLETED, State.REVISION_COMPLETED) and from_state != to_state:
            done[to_state] += n
        if "readback_mismatch" in codes:
            mismatched += n
        if command == "revise":
            revised["opened"] += n
        if to_state == State.REVISION_COMPLETED and from_state != to_state:
            revised["completed"] += n
        if to_state == State.REVISION_FAILED and from_state != to_state:
            revised["failed"] += n
    for command, n in sorted(by_command.items()):
        applied.add(n, kind="applied", command=command)
    for (command, code), n in sorted(by_reason.items()):
        reasons.add(n, kind="applied", command=command, reason=code)
    refused: Counter[str] = Counter()
    refused_reasons: Counter[tuple[str, str]] = Counter()
    for refusal in insights.refusal_counts():
        refused[refusal.command] += refusal.count
        for code in refusal.reasons:
            refused_reasons[(refusal.command, code)] += refusal.count
    for command, n in sorted(refused.items()):
        applied.add(n, kind="refused", command=command)
    for (command, code), n in sorted(refused_reasons.items()):
        reasons.add(n, kind="refused", command=command, reason=code)
    exhaustions.add(exhausted)
    deliveries.add(delivered, outcome="delivered")
    for state in (State.COMPLETED, State.REVISION_COMPLETED):
        deliveries.add(done[state.value], outcome=state.value)
    mismatches.add(mismatched)
    for outcome in ("opened", "completed", "failed"):
        revisions.add(revised[outcome], outcome=outcome)
    return [applied, reasons, exhaustions, deliveries, mismatches, revisions]


def _attempts(insights: Insights) -> Family:
    family = Family(
        "stopline_attempts_total", "counter", "Attempts of work steps, by how they ended."
    )
    for outcome, n in sorted(insights.attempt_outcomes().items(), key=lambda kv: kv[0] or ""):
        family.add(n, outcome=outcome or "unknown")
    return family


def _notifications(insights: Insights) -> Family:
    family = Family(
        "stopline_notifications",
        "gauge",
        "Webhook notifications in the outbox, by status.",
    )
    counts = insights.notification_counts()
    for status in NOTIFICATION_STATUSES:
        family.add(counts.get(status, 0), status=status)
    return family


def _histogram(
    family: Family, bounds: Iterable[float], counts: list[int], total: float, n: int, **labels: Any
) -> None:
    for bound, count in zip(bounds, counts, strict=True):
        family.add(count, le=repr(float(bound)), **labels)
    family.add(n, le="+Inf", **labels)
    family.samples.append(({**labels, "__suffix": "_sum"}, round(total, 6)))
    family.samples.append(({**labels, "__suffix": "_count"}, n))


def _by_automation(insights: Insights, now: datetime) -> list[Family]:
    items = Family("stopline_automation_items", "gauge", "Items by automation and state.")
    oldest_work = Family(
        "stopline_work_oldest_age_seconds",
        "gauge",
        "Age of the oldest item in each work state, by automation, since its last change: an"
        " item that is not moving (no worker running, a step that hangs).",
    )
    for row in insights.automation_states():
        items.add(row.count, automation=row.automation, state=row.state)
        if State(row.state).is_work and row.oldest is not None:
            age = max((now - row.oldest).total_seconds(), 0.0)
            oldest_work.add(round(age, 3), automation=row.automation, state=row.state)
    decided = Family(
        "stopline_time_to_decision_seconds",
        "histogram",
        "Time from an item entering a stop state to the event that moved it on, by automation.",
    )
    spans: dict[str, list[float]] = {}
    for span in insights.stop_spans():
        seconds = max((span.decided_at - span.stopped_at).total_seconds(), 0.0)
        spans.setdefault(span.automation, []).append(seconds)
    for automation, values in sorted(spans.items()):
        counts = [sum(1 for v in values if v <= b) for b in DECISION_BUCKETS]
        _histogram(
            decided, DECISION_BUCKETS, counts, sum(values), len(values), automation=automation
        )
    return [items, oldest_work, decided]


def _workers(insights: Insights, now: datetime) -> list[Family]:
    build = Family("stopline_build_info", "gauge", "The stopline version serving these metrics.")
    build.add(1, version=__version__, python=platform.python_version())
    live = Family(
        "stopline_workers",
        "gauge",
        f"Worker processes by heartbeat: live (seen within {LIVE_AFTER:g} s) or stale.",
    )
    age = Family(
        "stopline_worker_heartbeat_age_seconds",
        "gauge",
        "Seconds since each worker's last heartbeat.",
    )
    skew = Family(
        "stopline_worker_clock_skew_seconds",
        "gauge",
        "Seconds each worker's clock is from the database server's (PostgreSQL; past 30 s the "
        "worker claims nothing).",
    )
    steps = Family(
        "stopline_step_duration_seconds",
        "histogram",
        "How long work steps took, by automation (summed over the workers' heartbeats).",
    )
    beats = insights.workers()
    counts = {"live": 0, "stale": 0}
    merged: dict[str, dict[str, Any]] = {}
    for beat in beats:
        seconds = beat.age(now)
        counts["live" if seconds <= LIVE_AFTER else "stale"] += 1
        age.add(round(seconds, 3), worker=beat.worker, host=beat.host)
        off = beat.stats.get("clock_skew")
        if isinstance(off, int | float) and not isinstance(off, bool):
            skew.add(round(float(off), 3), worker=beat.worker, host=beat.host)
        for automation, h in (beat.stats.get("step_seconds") or {}).items():
            m = merged.setdefault(
                automation, {"buckets": [0] * len(STEP_BUCKETS), "count": 0, "sum": 0.0}
            )
            if len(h.get("buckets", ())) == len(STEP_BUCKETS):
                m["buckets"] = [a + int(b) for a, b in zip(m["buckets"], h["buckets"], strict=True)]
                m["count"] += int(h["count"])
                m["sum"] += float(h["sum"])
    for status, n in counts.items():
        live.add(n, status=status)
    for automation, m in sorted(merged.items()):
        _histogram(steps, STEP_BUCKETS, m["buckets"], m["sum"], m["count"], automation=automation)
    disabled = Family(
        "stopline_notify_endpoint_disabled",
        "gauge",
        "Notification endpoints disabled after answering 410 Gone (1 each).",
    )
    for endpoint in insights.disabled_endpoints():
        disabled.add(1, endpoint=endpoint.url)
    return [build, live, age, skew, steps, disabled]


def render(insights: Insights, now: datetime) -> str:
    families: Iterable[Family] = [
        *_items(insights, now),
        *_events(insights),
        _attempts(insights),
        _notifications(insights),
        *_by_automation(insights, now),
        *_workers(insights, now),
    ]
    return "\n".join(f.render() for f in families) + "\n"
