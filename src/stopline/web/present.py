"""What the pages show, computed from the shared views: ages, groups, diffs, action forms.

Nothing here decides anything: the action forms are the command table's web entries that the
core's rights allow the visitor on the item (a convenience for people), and every command is
decided by the core again when it arrives.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from ..commands.entry import Entry, Shell
from ..commands.fields import Field, Type
from ..commands.table import exposed
from ..core.approval import evidence_fresh
from ..core.authorship import author_text, event_author
from ..core.canonical import parse_time
from ..core.integrity import Finding
from ..core.policy import Policy
from ..core.records import Actor, Event, Item
from ..core.rights import rights
from ..core.states import STOP_STATES, State
from ..core.step import Context
from ..core.transitions import Cmd
from ..views import event_view, integrity_view, item_view, why

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


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


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


@dataclass(frozen=True)
class FormField:
    """One field of an action form, ready to render (``kind`` picks the input)."""

    name: str
    kind: str  # hidden | textarea | checkbox | number | select | checklist
    label: str
    required: bool
    testid: str
    value: Any = ""
    choices: tuple[str, ...] = ()
    checked: tuple[str, ...] = ()
    rows: int = 2
    min: int | None = None
    each_testid: str = ""


@dataclass(frozen=True)
class ActionForm:
    name: str
    title: str
    submit: str
    fields: tuple[FormField, ...]
    tone: str = "neutral"  # approve | danger | neutral: how the button looks
    effect: str = ""  # what the command will do, in one sentence


# Commands that end an item or throw its proposal away: shown apart from Approve, in red.
DESTRUCTIVE = frozenset({"close", "reject"})


def tone(name: str) -> str:
    return "approve" if name == "approve" else "danger" if name in DESTRUCTIVE else "neutral"


def approve_effect(item: Item) -> str:
    """What approving the current proposal will do (the last approval lets the worker act)."""
    p = item.doc("proposal")
    if p is None:
        return ""
    digest = str(p["digest"])
    counted = sum(1 for a in p["approvals"] if a["digest"] == digest)
    needed = int(p["required_approvals"])
    act = f"{p['action']} on {p['target'] or '-'}"
    if counted + 1 >= needed:
        return (
            f"Your approval is {counted + 1} of {needed}: the item moves to approved and a "
            f"worker runs {act}, after checking the digest, the roles and the evidence again."
        )
    return (
        f"Your approval is {counted + 1} of {needed}: {act} waits for "
        f"{needed - counted - 1} more approver(s); nothing runs yet."
    )


def approved_by(item: Item, actor: str) -> bool:
    """Whether ``actor`` has approved the item's current proposal."""
    p = item.doc("proposal")
    return p is not None and any(
        a["actor"] == actor and a["digest"] == p["digest"] for a in p["approvals"]
    )


def form_field(entry: Entry, spec: Field, item: Item) -> FormField | None:
    """The field as ``entry``'s form on ``item`` shows it (``None``: nothing to show)."""
    web = spec.web
    testid = f"{entry.name}-{web.testid or spec.name}"
    base = FormField(spec.name, "textarea", web.label, spec.required, testid, rows=web.rows)
    if spec.bound is not None:
        value = spec.bound(item)
        return None if value is None else replace(base, kind="hidden", value=value)
    prefill = spec.prefill(item) if spec.prefill is not None else None
    if spec.options is not None:
        choices = tuple(spec.options(item))
        if spec.type is not Type.KEYS:
            return replace(base, kind="select", choices=choices)
        each = f"{entry.name}-{web.each_testid}" if web.each_testid else testid
        checked = tuple(prefill) if prefill else choices
        return replace(base, kind="checklist", choices=choices, checked=checked, each_testid=each)
    if spec.limits.choices:
        return replace(base, kind="select", choices=spec.limits.choices)
    if spec.type is Type.BOOL:
        return replace(base, kind="checkbox")
    if spec.type is Type.INT:
        return replace(base, kind="number", min=web.min)
    if spec.type is Type.OBJECT:
        return replace(base, value=pretty(prefill) if prefill is not None else "")
    return replace(base, value=prefill or "")


def action_form(entry: Entry, item: Item) -> ActionForm:
    assert entry.form is not None  # the table checks that every web entry has one
    shown = (form_field(entry, spec, item) for spec in entry.fields)
    fields = tuple(f for f in shown if f is not None)
    effect = approve_effect(item) if entry.name == "approve" else ""
    return ActionForm(
        entry.name, entry.form.title, entry.form.submit, fields, tone(entry.name), effect
    )


def action_forms(
    item: Item, actor: Actor | None, policy: Policy | None, now: datetime
) -> list[ActionForm]:
    """The forms of every web command ``actor`` may run on ``item`` now (the core's rights).
    Approve is left out once ``actor`` has approved the current proposal (approving again
    would change nothing)."""
    if actor is None or not actor.active:
        return []
    allowed = rights(item, actor.name, Context(now, policy, {actor.name: actor}))
    forms = []
    for entry in exposed(Shell.WEB):
        if entry.name == "approve" and approved_by(item, actor.name):
            continue
        if allowed[entry.name].allowed and entry.fillable(item):
            forms.append(action_form(entry, item))
    return forms


def needs(item: Item, actor: Actor | None, policy: Policy | None, now: datetime) -> bool:
    """Whether ``actor`` can act on ``item`` now (the "needs me" filter): some action form
    that moves it (a note moves nothing, so it alone does not make an item need you)."""
    return any(f.name != "note" for f in action_forms(item, actor, policy, now))


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
                intended = a.get(name) if name != "assets" else a.get("assets")
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
    """The item page's model (``since``: when the item entered its current state;
    ``findings``: what the record fails against its history; then only Close is offered, the
    way out of a record nobody can trust)."""
    view = item_view(item, actors)
    actions = [] if read_only or not may_command else action_forms(item, actor, policy, now)
    if findings:
        actions = [form for form in actions if form.name == "close"]
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
