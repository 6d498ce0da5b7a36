"""The JSON API under ``/api/``: read items, and run every command of the CLI.

Status codes: 200 ``applied``/``zero_write``, 409 ``refused`` (with every reason), 422 malformed
input, 401 no valid bearer token, 403 a viewer or a read-only server, 404 no such item (reads),
413 a body over the limit (see :mod:`stopline.server.guard`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ..commands.entry import Entry, Shell, check_idempotency_key, validate
from ..commands.perform import Performed, perform
from ..commands.runners import RunOptions
from ..commands.table import exposed
from ..core import json_input, limits
from ..core.decision import Outcome
from ..core.integrity import Finding
from ..core.records import Actor, Item
from ..core.states import State, StateClass
from ..listing import checked
from ..server.access import authenticate
from ..server.item_ref import ITEM_RE
from ..server.query import whole_number
from ..server.state import Shared, shared
from ..views import event_view, integrity_view, item_view, summary_view

STATES = [s.value for s in State]
CLASSES = [c.value for c in StateClass]
MAX_LIMIT = 1000
FILTERS = ("state", "state_class", "automation", "key", "overdue", "sort", "limit")


def error(status: int, code: str, message: str, problems: list[str] | None = None) -> JSONResponse:
    headers = {"WWW-Authenticate": 'Bearer realm="stopline"'} if status == 401 else None
    body = {"error": code, "message": message, "problems": problems or []}
    return JSONResponse(body, status_code=status, headers=headers)


def unauthenticated() -> JSONResponse:
    return error(
        401, "unauthenticated", "send Authorization: Bearer <token> (stopline actors token NAME)"
    )


def bad_item() -> JSONResponse:
    problem = "item must be an item id (letters, digits, '_', '.', '@', ':', '-')"
    return error(422, "invalid_input", problem, [problem])


def decision_response(done: Performed) -> JSONResponse:
    """The decision JSON (with its ``explanation`` and ``details``): 409 when refused."""
    decision = done.decision
    assert decision is not None
    status = 409 if decision.outcome is Outcome.REFUSED else 200
    return JSONResponse(done.to_plain(), status_code=status)


async def _who(request: Request) -> Actor | None:
    s = shared(request)
    header = request.headers.get("authorization")
    return await run_in_threadpool(authenticate, s.controller, header)


def _summary(
    s: Shared, item: Item, actors: Any = None, findings: Sequence[Finding] = ()
) -> dict[str, Any]:
    return {
        **summary_view(item, actors, findings),
        "age_seconds": round(s.age(item), 3),
        "overdue": s.overdue(item),
    }


def _flag(value: str) -> bool | None:
    return {"true": True, "1": True, "false": False, "0": False}.get(value.lower())


def parse_filters(params: Any) -> tuple[dict[str, Any], list[str]]:
    """Query filters of the item list, validated (every problem listed)."""
    problems: list[str] = []
    out: dict[str, Any] = {"limit": MAX_LIMIT, "sort": "oldest"}
    for name in sorted(set(params.keys()) - set(FILTERS)):  # a typo never lists everything
        problems.append(f"unknown filter {name[:40]!r}; the filters are {', '.join(FILTERS)}")
    for name in ("automation", "key"):
        value = params.get(name)
        if value:
            if len(value) > 200 or "\x00" in value:
                problems.append(f"{name} must be at most 200 characters without NUL")
            out[name] = value
    for name, allowed in (
        ("state", STATES),
        ("state_class", CLASSES),
        ("sort", ["oldest", "newest"]),
    ):
        value = params.get(name)
        if value:
            if value not in allowed:
                problems.append(f"{name} must be one of {', '.join(allowed)}")
            out[name] = value
    if params.get("overdue"):
        flag = _flag(params["overdue"])
        if flag is None:
            problems.append("overdue must be true or false")
        out["overdue"] = flag
    if params.get("limit"):
        limit = whole_number(params["limit"], 1, MAX_LIMIT)
        if limit is None:
            problems.append(f"limit must be an integer from 1 to {MAX_LIMIT}")
        else:
            out["limit"] = limit
    return out, problems


def list_items(s: Shared, f: dict[str, Any]) -> list[Item]:
    """The first ``limit`` items in the sort order the filters keep; the database sorts, and
    filters all but ``overdue`` (kept in the first MAX_LIMIT items of that order)."""
    items = s.store.list_items(
        state=f.get("state"),
        automation=f.get("automation"),
        state_class=f.get("state_class"),
        key=f.get("key") or None,
        newest=f["sort"] == "newest",
        limit=MAX_LIMIT if f.get("overdue") is not None else f["limit"],
    )
    if f.get("overdue") is not None:
        items = [i for i in items if s.overdue(i) is f["overdue"]]
    items.sort(key=lambda i: (i.updated_at, i.id), reverse=f["sort"] == "newest")
    return items[: f["limit"]]


async def items_endpoint(request: Request) -> Response:
    if await _who(request) is None:
        return unauthenticated()
    filters, problems = parse_filters(request.query_params)
    if problems:
        return error(422, "invalid_input", "invalid filters", problems)
    s = shared(request)
    listed = await run_in_threadpool(list_items, s, filters)
    items = await run_in_threadpool(checked, s.store, listed)
    actors = await run_in_threadpool(s.controller.deciding_actors)
    return JSONResponse({"items": [_summary(s, i, actors, found) for i, found in items]})


def _unknown(ref: str) -> JSONResponse:
    doc = {
        "decision": "refused",
        "reasons": ["unknown_item"],
        "item": ref,
        "state": None,
        "sequence": None,
    }
    return JSONResponse(doc, status_code=404)


async def _item_of(request: Request) -> Item | Response:
    """The item the path names, or the response that says why there is none to show."""
    if await _who(request) is None:
        return unauthenticated()
    ref = request.path_params["item"]
    if not ITEM_RE.match(ref):
        return bad_item()
    item = await run_in_threadpool(shared(request).controller.item, ref)
    return _unknown(ref) if item is None else item


async def item_endpoint(request: Request) -> Response:
    item = await _item_of(request)
    if isinstance(item, Response):
        return item
    s = shared(request)
    actors = await run_in_threadpool(s.controller.deciding_actors)
    findings = await run_in_threadpool(s.controller.record_findings, item)
    return JSONResponse(
        {
            **item_view(item, actors),
            "integrity": integrity_view(findings),
            "age_seconds": round(s.age(item), 3),
            "overdue": s.overdue(item),
        }
    )


async def history_endpoint(request: Request) -> Response:
    item = await _item_of(request)
    if isinstance(item, Response):
        return item
    events = await run_in_threadpool(shared(request).store.history, item.id)
    return JSONResponse({"item": item.id, "events": [event_view(e) for e in events]})


async def me_endpoint(request: Request) -> Response:
    actor = await _who(request)
    if actor is None:
        return unauthenticated()
    s = shared(request)
    may = await run_in_threadpool(s.may_command, actor)
    return JSONResponse(
        {
            "actor": actor.name,
            "roles": sorted(actor.roles),
            "can_command": may and not s.settings.read_only,
            "read_only": s.settings.read_only,
            "mode": s.mode,
        }
    )


def parse_json(raw: bytes) -> tuple[Any, str | None]:
    """The body of a command: no bytes at all is no fields; anything else must be JSON (a body
    of only whitespace is not: it is refused as any other text that is not JSON)."""
    if not raw:
        return {}, None
    # The input limits of docs/records.md: NaN, 1e999, integers beyond ±(2**53 - 1) (which the
    # canonical form cannot hold), lone surrogates, bad UTF-8 and deep nesting are all 422.
    value, violations = json_input.parse_json(raw)
    if violations:
        kind = "is not valid JSON" if violations[0].limit == limits.SYNTAX else "breaks the limits"
        return None, f"the body {kind}: " + "; ".join(map(str, violations))
    return value, None


BODY_KEY = "idempotency_key"


def _body_key(body: Any, header: str | None) -> tuple[str | None, str | None]:
    """The idempotency key: the ``Idempotency-Key`` header, or ``idempotency_key`` in the body
    (taken out of it); both given must agree."""
    if not isinstance(body, dict) or BODY_KEY not in body:
        return header, None
    given = body.pop(BODY_KEY)
    if not isinstance(given, str):
        return header, f"{BODY_KEY} must be a string"
    if header is not None and header != given:
        return header, f"{BODY_KEY} and the Idempotency-Key header differ"
    return given, None


def command_endpoint(entry: Entry) -> Any:
    async def endpoint(request: Request) -> Response:
        actor = await _who(request)
        if actor is None:
            return unauthenticated()
        s = shared(request)
        if s.settings.read_only:
            return error(403, "read_only", "this server is read-only: commands are refused")
        if not await run_in_threadpool(s.may_command, actor):
            return error(403, "forbidden", f"{actor.name} holds no role that may run a command")
        ref = request.path_params["item"]
        if not ITEM_RE.match(ref):
            return bad_item()
        body, problem = parse_json(await request.body())
        if problem:
            return error(422, "invalid_input", problem, [problem])
        key = request.headers.get("idempotency-key")
        key, key_problem = _body_key(body, key)
        fields, problems = validate(entry, body)
        key_problem = key_problem or check_idempotency_key(key)
        if key is not None and not entry.idempotent:
            key_problem = f"{entry.name} takes no Idempotency-Key"
        if key_problem:
            problems.append(key_problem)
        if problems:
            return error(422, "invalid_input", "; ".join(problems), problems)
        options = RunOptions(key, s.settings.app_spec)
        done = await run_in_threadpool(
            perform, s.controller, entry, ref, actor=actor.name, fields=fields, options=options
        )
        if done.problems:
            problems = list(done.problems)
            return error(422, "invalid_input", "; ".join(problems), problems)
        return decision_response(done)

    endpoint.__name__ = f"{entry.name}_endpoint"
    return endpoint


def routes() -> list[BaseRoute]:
    out: list[BaseRoute] = [
        Route("/api/me", me_endpoint, methods=["GET"]),
        Route("/api/items", items_endpoint, methods=["GET"]),
        Route("/api/items/{item}", item_endpoint, methods=["GET"]),
        Route("/api/items/{item}/history", history_endpoint, methods=["GET"]),
    ]
    for entry in exposed(Shell.HTTP):
        out.append(
            Route(f"/api/items/{{item}}/{entry.name}", command_endpoint(entry), methods=["POST"])
        )
    return out
