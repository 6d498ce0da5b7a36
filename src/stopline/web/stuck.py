"""Stuck work: work-state items with no decision recorded for longer than a threshold (an
approved item with no worker running, a step whose worker vanished). Read-only."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ..core.canonical import format_time, parse_time
from ..server.query import whole_number
from ..server.state import Shared
from ..views import why
from . import present
from .page import visit

DEFAULT_MINUTES = 15
MAX_MINUTES = 60 * 24 * 366
PAGE_SIZE = 50


def _cursor(at: datetime, item_id: str) -> str:
    raw = json.dumps([format_time(at), item_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _uncursor(text: str) -> tuple[datetime, str] | None:
    if len(text) > 1000:
        return None
    try:
        at, item_id = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        if not isinstance(at, str) or not isinstance(item_id, str):
            return None
        return parse_time(at), item_id
    except (binascii.Error, ValueError, TypeError):
        return None


def parse(q: Any) -> tuple[int, tuple[datetime, str] | None, list[str]]:
    problems = []
    text = q.get("minutes", "") or str(DEFAULT_MINUTES)
    minutes = whole_number(text, 1, MAX_MINUTES)
    if minutes is None:
        problems.append(f"minutes is a whole number from 1 to {MAX_MINUTES}")
        minutes = DEFAULT_MINUTES
    after = None
    if q.get("after", ""):
        after = _uncursor(q.get("after", ""))
        if after is None:
            problems.append("after is not a page cursor of this view (start again)")
    return minutes, after, problems


def _model(s: Shared, minutes: int, after: tuple[datetime, str] | None) -> dict[str, Any]:
    now = s.now()
    before = now - timedelta(minutes=minutes)
    insights = s.store.insights
    items = insights.stuck_work(before, after, PAGE_SIZE + 1)
    more = len(items) > PAGE_SIZE
    items = items[:PAGE_SIZE]
    rows = [
        {
            "id": i.id,
            "ref": f"{i.automation}/{i.key}",
            "state": i.state.value,
            "unmoved": present.age_text((now - i.updated_at).total_seconds()),
            "lease": None
            if i.lease_owner is None
            else {
                "owner": i.lease_owner,
                "live": i.lease_live(now),
            },
            "why": why(i),
        }
        for i in items
    ]
    last = items[-1] if items else None
    next_url = None
    if more and last is not None:
        cursor = _cursor(last.updated_at, last.id)
        next_url = "/stuck?" + urlencode({"minutes": minutes, "after": cursor})
    return {"rows": rows, "total": insights.stuck_count(before), "next_url": next_url}


async def stuck(request: Request) -> Response:
    v = await visit(request)
    if v.actor is None:
        return v.redirect("/signin")
    minutes, after, problems = parse(request.query_params)
    if problems:
        empty = {"rows": [], "total": 0, "next_url": None}
        return v.render("stuck.html", 422, minutes=minutes, problems=problems, **empty)
    model = await run_in_threadpool(_model, v.s, minutes, after)
    return v.render("stuck.html", minutes=minutes, problems=[], **model)
