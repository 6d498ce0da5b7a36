"""What the pages show, computed from the shared views: ages, groups, diffs, the item page
(its action forms are in ``forms.py``). Nothing here decides anything."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..core.approval import evidence_fresh
from ..core.authorship import author_text, event_author
from ..core.canonical import parse_time
from ..core.integrity import Finding
from ..core.policy import Policy
from ..core.records import Actor, Event, Item
from ..core.states import STOP_STATES, State
from ..core.transitions import Cmd
from ..views import event_view, integrity_view, item_view, why
from .forms import action_forms, approved_by, pretty

STOP_ORDER = [
    State.AWAITING_APPROVAL,
    State.EXCEPTION,
    State.EXHAUSTED,
    State.REVISION_FAILED,
    State.READY_FOR_REVIEW,
]
assert set(STOP_ORDER) == STOP_STATES


def age_text(seconds: float) -> str:
    s = int(max(seconds, 0))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


@dataclass
class Row:
    id: str
    automation: str
    key: str
    state: str
    age: float  # seconds since the item entered its stop state
    age_text: str
    overdue: bool
    why: str
    severity: str = "normal"


@dataclass
class Group:
    """One stop state: how many items match the filters (on every page), how long the oldest
    has waited, and this page's rows in it."""

    state: str
    rows: list[Row] = field(default_factory=list)
    count: int = 0
    oldest: str = ""  # the age of the oldest matching item ("" when none)


def row(
    item: Item,
    age: float,
    overdue: bool,
    actors: Mapping[str, Actor] | None = None,
    severity: str = "normal",
) -> Row:
    return Row(
        item.id,
        item.automation,
        item.key,
        item.state.value,
        age,
        age_text(age),
        overdue,
        why(item, actors),
        severity,
    )


def groups(rows: list[Row], counts: Mapping[str, tuple[int, float | None]]) -> list[Group]:
    """The stop states in inbox order, each with its count and oldest age (``counts``: state
    -> (count, age of the oldest in seconds)) and the rows of this page, in page order."""
    by_state = {s.value: Group(s.value) for s in STOP_ORDER}
    for state, (count, oldest) in counts.items():
        if state in by_state:
            by_state[state].count = count
            by_state[state].oldest = "" if oldest is None else age_text(oldest)
    for r in rows:
        by_state[r.state].rows.append(r)
    return list(by_state.values())


def params_rows(proposal: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """Each parameter as text: strings as they are (a draft keeps its lines), the rest JSON."""
    params = (proposal or {}).get("params")
    if not isinstance(params, Mapping):
        return [("params", pretty(params))] if proposal else []
    return [(k, v if isinstance(v, str) else pretty(v)) for k, v in sorted(params.items())]


def _lines(value: Any) -> list[str]:
    text = value if isinstance(value, str) else pretty(value)
    return text.splitlines()


def proposal_diff(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """Field-level changes from the previous proposal, with a line diff of each change."""
    if not old or not new:
        return []
    fields: list[tuple[str, Any, Any]] = []
    for name in ("action", "target", "rationale"):
        if old.get(name) != new.get(name):
            fields.append((name, old.get(name), new.get(name)))
    before, after = old.get("params") or {}, new.get("params") or {}
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name):
            fields.append((f"params.{name}", before.get(name), after.get(name)))
    out = []
    for name, a, b in fields:
        lines = list(
            difflib.unified_diff(_lines(a), _lines(b), "previous", "current", lineterm="", n=2)
        )
        out.append(
            {"field": name, "lines": [{"text": line, "kind": _kind(line)} for line in lines[2:]]}
        )
    return out


def _kind(line: str) -> str:
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    if line.startswith("@@"):
        return "hunk"
    return "same"


def mismatches(view: Mapping[str, Any]) -> dict[str, Any]:
    """Readback mismatches recorded for each artifact key (exception or failed revision)."""
    found: dict[str, Any] = {}
    exc = view.get("exception") or {}
    if isinstance(exc.get("evidence"), Mapping):
        for key, value in exc["evidence"].items():
            if isinstance(value, Mapping) and ("fields" in value or "missing" in value):
                found[key] = value
    failure = ((view.get("revision") or {}).get("failure") or {}).get("mismatches") or {}
    found.update({k: v for k, v in failure.items() if isinstance(v, Mapping)})
    return found


def artifact_rows(view: Mapping[str, Any]) -> list[dict[str, Any]]:
    wrong = mismatches(view)
    out = []
    for a in view.get("artifacts", []):
        m = wrong.get(a["key"])
        diff = []
        if m and m.get("fields"):
            for name in m["fields"]:
                intended = a.get(name)
                diff.append(
                    {
                        "field": name,
                        "intended": intended if isinstance(intended, str) else pretty(intended),
                    }
                )
        out.append(
            {
                **a,
                "status": "missing"
                if m and m.get("missing")
                else "mismatch"
                if m
                else "verified"
                if a["readback_verified"]
                else "unverified",
                "observed_hash": m.get("observed") if m else None,
                "diff": diff,
            }
        )
    return out


def evidence_info(view: Mapping[str, Any], now: datetime) -> dict[str, Any] | None:
    evidence = view.get("evidence")
    if not evidence:
        return None
    observed = evidence.get("observed_at")
    age = (now - parse_time(observed)).total_seconds() if observed else None
    proposal = view.get("proposal")
    stale = proposal is not None and not evidence_fresh(proposal, now)
    return {
        "observed_at": observed,
        "age": age_text(age) if age is not None else "unknown",
        "stale": stale,
        "max_age": age_text(float(proposal["max_evidence_age"])) if proposal else None,
        "digest": evidence.get("digest"),
        "data": pretty(evidence.get("data")),
    }


def timeline(events: list[Event]) -> list[dict[str, Any]]:
    """The history as the item page shows it: each event with its author in words, a note's
    body on its own, and the rest of its detail as JSON."""
    out = []
    for e in events:
        plain = event_view(e)
        note = e.command == Cmd.NOTE
        rest = {
            k: v for k, v in plain["detail"].items() if k != "author" and not (note and k == "body")
        }
        out.append(
            {
                **plain,
                "author_text": author_text(event_author(e.detail)),
                "note_body": str(e.detail.get("body", "")) if note else "",
                "detail_text": pretty(rest) if rest else "",
            }
        )
    return out


def item_page(
    item: Item,
    events: list[Event],
    now: datetime,
    actor: Actor | None,
    policy: Policy | None,
    read_only: bool,
    may_command: bool,
    actors: Mapping[str, Actor] | None = None,
    since: datetime | None = None,
    findings: Sequence[Finding] = (),
) -> dict[str, Any]:
    """The item page's model (``since``: when the item entered its current state; with
    ``findings`` against its history, only Close: the way out of a record nobody can trust)."""
    view = item_view(item, actors)
    only = frozenset({"close"}) if findings else None
    actions = [] if read_only or not may_command else action_forms(item, actor, policy, now, only)
    return {
        "item": view,
        "integrity": integrity_view(findings),
        "why": why(item, actors),
        "evidence": evidence_info(view, now),
        "params": params_rows(view.get("proposal")),
        "diff": proposal_diff(view.get("previous_proposal"), view.get("proposal")),
        "artifacts": artifact_rows(view),
        "events": timeline(events),
        "actions": actions,
        "pretty": pretty,
        "age": age_text((now - item.updated_at).total_seconds()),
        "in_state": age_text((now - (since or item.updated_at)).total_seconds()),
        "approved_by_me": actor is not None and approved_by(item, actor.name),
    }
