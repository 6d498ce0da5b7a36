"""The inbox: stopped items grouped by stop state, filters, and the "next item" flow."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ..core.states import STOP_STATES
from ..server.state import Shared
from . import present
from .page import visit

STOP_VALUES = [s.value for s in present.STOP_ORDER]


def filters(request: Request) -> tuple[dict[str, Any], list[str]]:
    q = request.query_params
    problems = []
    f: dict[str, Any] = {
        "automation": q.get("automation", "").strip(),
        "state": q.get("state", ""),
        "overdue": q.get("overdue", ""),
        "sort": q.get("sort", "oldest"),
    }
    if len(f["automation"]) > 200 or "\x00" in f["automation"]:
        problems.append("automation must be at most 200 characters")
    if f["state"] and f["state"] not in STOP_VALUES:
        problems.append(f"state must be one of {', '.join(STOP_VALUES)}")
    if f["overdue"] not in ("", "1"):
        problems.append("overdue is 1 or empty")
    if f["sort"] not in ("oldest", "newest"):
        problems.append("sort is oldest or newest")
    return f, problems


def _rows(s: Shared, f: dict[str, Any]) -> list[present.Row]:
    items = s.store.list_items(
        state_class="stop", state=f["state"] or None, automation=f["automation"] or None, limit=1000
    )
    actors = s.store.actors()
    rows = [present.row(i, s.age(i), s.overdue(i), actors) for i in items if i.state in STOP_STATES]
    if f["overdue"]:
        rows = [r for r in rows if r.overdue]
    return rows


async def inbox(request: Request) -> Response:
    v = await visit(request)
    if v.actor is None:
        return v.redirect("/signin")
    f, problems = filters(request)
    if problems:
        return v.render(
            "inbox.html",
            422,
            groups=[],
            filters=f,
            problems=problems,
            automations=[],
            total=0,
            query="",
        )
    rows = await run_in_threadpool(_rows, v.s, f)
    names = await run_in_threadpool(v.s.store.insights.automation_names)
    return v.render(
        "inbox.html",
        groups=present.groups(rows, f["sort"] == "newest"),
        filters=f,
        problems=[],
        automations=names,
        total=len(rows),
        query=query_string(f),
    )


def query_string(f: dict[str, Any]) -> str:
    return urlencode({k: v for k, v in f.items() if v and k != "sort"})


async def next_item(request: Request) -> Response:
    v = await visit(request)
    if v.actor is None:
        return v.redirect("/signin")
    f, problems = filters(request)
    if problems:
        return v.redirect("/inbox")
    rows = sorted(await run_in_threadpool(_rows, v.s, f), key=lambda r: (-r.age, r.id))
    after = request.query_params.get("after", "")
    ids = [r.id for r in rows]
    if after in ids:
        ids = ids[ids.index(after) + 1 :] + [i for i in ids[: ids.index(after)]]
    if not ids:
        return v.redirect("/inbox?" + query_string(f))
    query = query_string(f)
    return v.redirect(f"/items/{ids[0]}" + (f"?{query}" if query else ""))
