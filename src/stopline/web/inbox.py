"""The inbox: stopped items in pages grouped by stop state, search and filters, the "next item"
flow, and the stuck-work view of work-state items that have not moved."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response

from ..core.policy import Policy
from ..core.records import Actor
from ..core.severity import RANK
from ..core.severity import of as severity_of
from ..runtime.heartbeat import LIVE_AFTER
from ..server.item_ref import ITEM_RE
from ..server.state import Shared
from ..store import PageKey, StopRow
from . import forms, listing, present, stuck
from .page import visit


def filters(request: Request) -> tuple[dict[str, Any], list[str]]:
    """The filters as a plain mapping (what the item page carries on to "next item")."""
    found, problems = listing.parse(request.query_params)
    return found.values(), problems


def query_string(f: dict[str, Any]) -> str:
    return listing.Filters(**{k: v for k, v in f.items() if k != "after"}).query()


class _Rights:
    """Whether the visitor may act on a row now, with each automation's policy read once."""

    def __init__(self, s: Shared, actor: Actor | None, now: datetime) -> None:
        self.s, self.actor, self.now = s, actor, now
        self.policies: dict[str, Policy | None] = {}

    def __call__(self, row: StopRow) -> bool:
        name = row.item.automation
        if name not in self.policies:
            self.policies[name] = self.s.store.policy(name)
        return forms.needs(row.item, self.actor, self.policies[name], self.now)


def _page(s: Shared, f: listing.Filters, actor: Actor | None) -> listing.Page:
    now = s.now()
    query = f.store_query(now, s.settings.overdue_after)
    insights = s.store.insights
    if f.mine:
        may = s.may_command(actor) and not s.settings.read_only
        keep = _Rights(s, actor, now) if may else (lambda row: False)
        return listing.mine_page(insights.stop_page, query, keep)
    return listing.plain_page(insights.stop_page, insights.stop_counts, query)


def _model(s: Shared, f: listing.Filters, actor: Actor | None) -> dict[str, Any]:
    page = _page(s, f, actor)
    now = s.now()
    actors = s.controller.deciding_actors()
    limit = s.settings.overdue_after
    rows = []
    for r in page.rows:
        age = max(0.0, (now - r.since).total_seconds())
        rows.append(present.row(r.item, age, age > limit, actors, r.severity))
    counts = {
        state: (c.count, None if c.oldest is None else (now - c.oldest).total_seconds())
        for state, c in page.counts.items()
    }
    return {
        "groups": present.groups(rows, counts),
        "rows": rows,
        "total": page.total,
        "counted_all": page.counted_all,
        "scan_limit": listing.SCAN_LIMIT,
        "partial": page.partial,
        "scanned": page.scanned,
        "next_url": None
        if page.next_key is None
        else "/inbox?" + f.query(after=listing.encode_key(page.next_key)),
        "first_url": "/inbox?" + f.query() if f.after is not None else None,
        "automations": s.store.insights.automation_names(),
        "stuck": s.store.insights.stuck_count(now - timedelta(minutes=stuck.DEFAULT_MINUTES)),
        "bulk": s.may_command(actor) and not s.settings.read_only,
        "workers": _workers(s, now),
    }


def _workers(s: Shared, now: datetime) -> dict[str, int]:
    """Live and stale worker processes, from their heartbeats: with none live, approved work
    waits for nobody (the inbox says so)."""
    beats = s.store.insights.workers()
    live = sum(1 for b in beats if b.age(now) <= LIVE_AFTER)
    return {"live": live, "stale": len(beats) - live}


async def inbox(request: Request) -> Response:
    v = await visit(request)
    if v.actor is None:
        return v.redirect("/signin")
    f, problems = listing.parse(request.query_params)
    base: dict[str, Any] = {"filters": f, "query": f.query()}
    if problems:
        empty: dict[str, Any] = {
            "groups": [],
            "rows": [],
            "total": 0,
            "automations": [],
            "bulk": False,
            "stuck": 0,
            "workers": None,
        }
        return v.render("inbox.html", 422, problems=problems, **base, **empty, **_no_pages())
    model = await run_in_threadpool(_model, v.s, f, v.actor)
    return v.render("inbox.html", problems=[], **base, **model)


def _no_pages() -> dict[str, Any]:
    return {"next_url": None, "first_url": None, "counted_all": True, "partial": False}


def _key_of(s: Shared, ref: str) -> PageKey | None:
    """The sort key of item ``ref`` (the cursor right after it), if it is still stopped."""
    item = s.store.get(ref)
    since = s.store.insights.stopped_since(ref) if item is not None else None
    if item is None or since is None:
        return None
    return PageKey(RANK[severity_of(item.doc("severity"))], since, item.id)


async def next_item(request: Request) -> Response:
    """The first item of the inbox's order after ``after`` (an item id), else the first."""
    v = await visit(request)
    if v.actor is None:
        return v.redirect("/signin")
    kept = [(k, val) for k, val in request.query_params.multi_items() if k != "after"]
    f, problems = listing.parse(QueryParams(kept))
    if problems:
        return v.redirect("/inbox")
    after = request.query_params.get("after", "")
    if not ITEM_RE.match(after):
        after = ""  # what cannot be an item's id is no cursor (and never reaches the database)

    def find() -> str | None:
        f.size = 1
        if after:
            f.after = _key_of(v.s, after)
            if f.after is not None:
                rows = _page(v.s, f, v.actor).rows
                if rows:
                    return rows[0].item.id
        f.after = None
        rows = _page(v.s, f, v.actor).rows
        return rows[0].item.id if rows and rows[0].item.id != after else None

    found = await run_in_threadpool(find)
    f.size = listing.PAGE_SIZE
    query = f.query()
    if found is None:
        return v.redirect("/inbox" + (f"?{query}" if query else ""))
    return v.redirect(f"/items/{found}" + (f"?{query}" if query else ""))
