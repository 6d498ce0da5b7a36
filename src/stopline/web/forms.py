"""The action forms of an item page: the command table's web entries that the core's rights
allow the visitor on the item now. A convenience for people: nothing here decides anything,
and every command is decided by the core again when it arrives."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ..commands.entry import Entry, Shell
from ..commands.fields import Field, Type
from ..commands.table import exposed
from ..core.policy import Policy
from ..core.records import SHAPE_ERRORS, Actor, Item
from ..core.rights import verdict
from ..core.step import Context
from ..core.transitions import Cmd


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


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
    """Whether ``actor`` has approved the item's current proposal (not of a malformed one)."""
    p = item.doc("proposal")
    try:
        return p is not None and any(
            a["actor"] == actor and a["digest"] == p["digest"] for a in p["approvals"]
        )
    except SHAPE_ERRORS:
        return False


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
    item: Item,
    actor: Actor | None,
    policy: Policy | None,
    now: datetime,
    only: frozenset[str] | None = None,
) -> list[ActionForm]:
    """The forms of every web command (or of those named ``only``) ``actor`` may run on
    ``item`` now (the core's rights). Approve is left out once ``actor`` has approved the
    current proposal (approving again would change nothing). A form that cannot be read off
    a record edited into a shape no write makes is not offered."""
    if actor is None or not actor.active:
        return []
    ctx = Context(now, policy, {actor.name: actor})
    forms = []
    for entry in exposed(Shell.WEB):
        if only is not None and entry.name not in only:
            continue
        try:
            if entry.name == "approve" and approved_by(item, actor.name):
                continue
            if verdict(item, Cmd(entry.name), actor.name, ctx).allowed and entry.fillable(item):
                forms.append(action_form(entry, item))
        except SHAPE_ERRORS:
            continue
    return forms


def needs(item: Item, actor: Actor | None, policy: Policy | None, now: datetime) -> bool:
    """Whether ``actor`` can act on ``item`` now (the "needs me" filter): some action form
    that moves it (a note moves nothing, so it alone does not make an item need you)."""
    return any(f.name != "note" for f in action_forms(item, actor, policy, now))
