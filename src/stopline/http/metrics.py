"""``/metrics`` in the Prometheus text format (version 0.0.4).

Every series is an aggregate: labels carry states, commands, reason codes and outcomes,
never an item id, key or automation name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ..core.states import STOP_STATES, State
from ..store import NOTIFICATION_STATUSES, Insights

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
            inner = ",".join(f'{k}="{_label(v)}"' for k, v in sorted(labels.items()))
            shown = repr(float(value)) if isinstance(value, float) else str(value)
            lines.append(f"{self.name}{{{inner}}} {shown}" if inner else f"{self.name} {shown}")
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


def render(insights: Insights, now: datetime) -> str:
    families: Iterable[Family] = [
        *_items(insights, now),
        *_events(insights),
        _attempts(insights),
        _notifications(insights),
    ]
    return "\n".join(f.render() for f in families) + "\n"
