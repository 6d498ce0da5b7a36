"""One item: its page, and each action form posted back to it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from ..commands.entry import Entry, Shell, validate
from ..commands.fields import ABSENT, from_text
from ..commands.perform import perform
from ..commands.runners import RunOptions
from ..commands.table import exposed
from ..core.decision import Outcome
from ..core.records import Actor, Event
from ..server.item_ref import ITEM_RE
from . import present
from .inbox import filters, query_string
from .page import Visit, may_post, read_form, visit

WEB_COMMANDS = {entry.name: entry for entry in exposed(Shell.WEB)}


def confirmed_flash(
    done: str, outcome: str, events: Sequence[Event], actor: Actor | None
) -> dict[str, str] | None:
    """The line that tells the visitor what their command just did, from the query string of
    the redirect after it; shown only when the item's history bears it out (``applied``: the
    visitor's latest event on the item is that command; ``zero_write``: the item holds an event
    of that command), so a link crafted with ``?done=approve&outcome=applied`` cannot make a
    page claim an approval its visitor never gave."""
    if actor is None or done not in WEB_COMMANDS or outcome not in ("applied", "zero_write"):
        return None
    if outcome == "applied":
        mine = [e for e in events if e.actor == actor.name]
        happened = bool(mine) and mine[-1].command == done
    else:
        happened = any(e.command == done for e in events)
    return {"command": done, "outcome": outcome} if happened else None


def _page_model(v: Visit, ref: str, done: str = "", outcome: str = "") -> dict[str, Any] | None:
    item = v.s.controller.item(ref) if ITEM_RE.match(ref) else None
    if item is None:
        return None
    events = v.s.store.history(item.id)
    return present.item_page(
        item,
        events,
        v.s.now(),
        v.actor,
        v.s.store.policy(item.automation),
        v.s.settings.read_only,
        v.may_command,
        v.s.controller.deciding_actors(),
        v.s.store.insights.stopped_since(item.id),
        v.s.controller.record_findings(item),
    ) | {"flash": confirmed_flash(done, outcome, events, v.actor)}


async def item_page(request: Request) -> Response:
    v = await visit(request)
    if v.actor is None:
        return v.redirect("/signin")
    query = request.query_params
    ref = request.path_params["item"]
    done, outcome = query.get("done", ""), query.get("outcome", "")
    model = await run_in_threadpool(_page_model, v, ref, done, outcome)
    if model is None:
        return v.message(404, "No such item", "There is no item with that id.")
    return v.render(
        "item.html",
        **model,
        refusal=None,
        problems=[],
        filters_query=query_string(filters(request)[0]),
    )


def form_values(entry: Entry, form: FormData) -> tuple[dict[str, Any], list[str]]:
    """A form as the JSON body of the same command (then validated like one)."""
    body: dict[str, Any] = {}
    problems: list[str] = []
    for name in {k for k in form if k != "csrf"}:
        texts = [r for r in form.getlist(name) if isinstance(r, str)]
        spec = entry.field(name)
        if spec is None:  # refused by validate() as an unknown field
            body[name] = texts[-1] if texts else ""
            continue
        value, found = from_text(spec, texts)
        problems += found
        if value is not ABSENT:
            body[name] = value
    fields, more = validate(entry, body)
    return fields, problems + more


async def act(request: Request) -> Response:
    v = await visit(request)
    entry = WEB_COMMANDS.get(request.path_params["command"])
    form, problem = await read_form(request)
    ref = request.path_params["item"]
    if entry is None or not ITEM_RE.match(ref):
        return v.message(404, "No such action", "This page has no such action.")
    if problem is not None:  # the item page, as for any problem of a form's fields
        return await _again(v, ref, 422, problems=[f"{problem}. Nothing was done."], refusal=None)
    refused = may_post(v, form)
    if refused is not None:
        return refused
    assert v.actor is not None  # may_post answered for a visitor nobody signed in
    fields, problems = form_values(entry, form)
    if problems:
        return await _again(v, ref, 422, problems=problems, refusal=None)
    options = RunOptions(app_spec=v.s.settings.app_spec)
    done = await run_in_threadpool(
        perform, v.s.controller, entry, ref, actor=v.actor.name, fields=fields, options=options
    )
    if done.problems:
        return await _again(v, ref, 422, problems=list(done.problems), refusal=None)
    decision = done.decision
    assert decision is not None
    if decision.outcome is Outcome.REFUSED:
        refusal = {
            "command": entry.name,
            "reasons": list(decision.reasons),
            "explanation": list(done.explanation.sentences),
            "diff": list(done.explanation.details.get("diff", ())),
        }
        return await _again(v, ref, 409, problems=[], refusal=refusal)
    target = decision.item_id or ref
    return v.redirect(
        f"/items/{target}?" + urlencode({"done": entry.name, "outcome": decision.outcome.value})
    )


async def _again(
    v: Visit, ref: str, status: int, *, problems: list[str], refusal: dict[str, Any] | None
) -> Response:
    """The item page as it is now, with what went wrong."""
    model = await run_in_threadpool(_page_model, v, ref)
    if model is None:
        reasons = ", ".join(refusal["reasons"]) if refusal else "; ".join(problems)
        return v.message(
            status if refusal else 404, "No such item", f"Nothing was done ({reasons})."
        )
    return v.render(
        "item.html",
        status,
        **model,
        refusal=refusal,
        problems=problems,
        filters_query="",
    )
