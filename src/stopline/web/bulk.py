"""Bulk acknowledge and close from the inbox: one command per item through the command table,
each decided, applied or refused on its own, and a page that reports every result.

A form that cannot be sent as it is (no valid CSRF token, an unknown command, no items, too
many, a malformed id, a reason that fails the field's check) writes nothing at all."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ..commands.entry import validate
from ..commands.perform import perform
from ..commands.runners import RunOptions
from ..core.decision import Outcome
from ..server.item_ref import ITEM_RE
from .item import WEB_COMMANDS
from .page import Visit, form_text, malformed, may_post, read_form, visit

BULK_COMMANDS = ("acknowledge", "close")
MAX_ITEMS = 200


@dataclass
class Result:
    id: str
    ref: str
    outcome: str  # applied | zero_write | refused | problem
    reasons: list[str] = field(default_factory=list)
    explanation: list[str] = field(default_factory=list)


def _run(v: Visit, command: str, fields: dict[str, Any], ids: list[str]) -> list[Result]:
    entry = WEB_COMMANDS[command]
    assert v.actor is not None
    options = RunOptions(app_spec=v.s.settings.app_spec)
    results = []
    for item_id in ids:
        item = v.s.store.get(item_id)
        ref = item_id if item is None else f"{item.automation}/{item.key}"
        done = perform(
            v.s.controller, entry, item_id, actor=v.actor.name, fields=fields, options=options
        )
        if done.problems or done.decision is None:
            results.append(Result(item_id, ref, "problem", list(done.problems)))
            continue
        d = done.decision
        results.append(
            Result(
                item_id,
                ref,
                d.outcome.value,
                list(d.reasons),
                list(done.explanation.sentences) if d.outcome is Outcome.REFUSED else [],
            )
        )
    return results


async def bulk(request: Request) -> Response:
    v = await visit(request)
    form, problem = await read_form(request)
    if problem is not None:
        return malformed(v, problem)
    refused = may_post(v, form)
    if refused is not None:
        return refused
    assert v.actor is not None  # may_post answered for a visitor nobody signed in
    command = form_text(form, "command")
    ids = list(dict.fromkeys(i for i in form.getlist("item") if isinstance(i, str)))
    problems = []
    if command not in BULK_COMMANDS:
        problems.append(f"command is one of {', '.join(BULK_COMMANDS)}")
    if not ids:
        problems.append("select at least one item")
    if len(ids) > MAX_ITEMS:
        problems.append(f"at most {MAX_ITEMS} items at once")
    if any(not ITEM_RE.match(i) for i in ids):
        problems.append("an item id is malformed")
    fields: dict[str, Any] = {}
    if not problems:
        reason = form_text(form, "reason").strip()
        fields, found = validate(WEB_COMMANDS[command], {"reason": reason} if reason else {})
        problems += found
    if problems:
        return v.render("bulk.html", 422, command=command, problems=problems, results=[])
    results = await run_in_threadpool(_run, v, command, fields, ids)
    return v.render("bulk.html", command=command, problems=[], results=results)
