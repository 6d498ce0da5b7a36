"""The inbox's list: its filters from the query string, page cursors, and the pages themselves
(keyset pages from the insights port; "needs me" keeps the rows the visitor may act on now).

A cursor is the sort key of the last row of the previous page, so a page stays where it was
while items arrive or leave. Every value of the query string is checked: a bad one is a
problem shown on the page, never a guess.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from starlette.datastructures import QueryParams

from ..core.canonical import format_time, parse_time
from ..core.severity import SEVERITIES
from ..core.states import STOP_STATES
from ..server.query import whole_number
from ..store import PAGE_SORTS as SORTS
from ..store import PageKey, StateCount, StopQuery, StopRow

STOP_VALUES = sorted(s.value for s in STOP_STATES)
PAGE_SIZE = 50
MAX_SIZE = 200  # the largest page a visitor may ask for
MAX_TEXT = 200
SCAN_CHUNK = 200  # rows read at a time while "needs me" looks for a page
SCAN_LIMIT = 2000  # rows one request reads at most for "needs me" (then: a next link)
FILTER_KEYS = ("q", "automation", "state", "overdue", "mine", "sort", "size")


@dataclass
class Filters:
    q: str = ""
    automation: str = ""
    state: str = ""
    overdue: str = ""
    mine: str = ""
    sort: str = "severity"
    size: int = PAGE_SIZE
    after: PageKey | None = None

    def values(self) -> dict[str, Any]:
        """The filters as the query string carries them (defaults left out)."""
        plain = {k: getattr(self, k) for k in FILTER_KEYS}
        defaults = {"sort": "severity", "size": PAGE_SIZE}
        return {k: v for k, v in plain.items() if v and defaults.get(k) != v}

    def query(self, **changes: Any) -> str:
        return urlencode({**self.values(), **changes})

    def store_query(self, now: datetime, overdue_after: float) -> StopQuery:
        return StopQuery(
            state=self.state or None,
            automation=self.automation or None,
            text=self.q or None,
            stopped_before=now - timedelta(seconds=overdue_after) if self.overdue else None,
            sort=self.sort,
            after=self.after,
            limit=self.size,
        )


def _text(q: QueryParams, name: str, problems: list[str]) -> str:
    value = q.get(name, "").strip()
    if len(value) > MAX_TEXT or "\x00" in value:
        problems.append(f"{name} must be at most {MAX_TEXT} characters")
        return ""
    return value


def parse(q: QueryParams) -> tuple[Filters, list[str]]:
    """The filters of a query string, and what is wrong with it (empty: fine)."""
    problems: list[str] = []
    f = Filters(
        q=_text(q, "q", problems),
        automation=_text(q, "automation", problems),
        state=q.get("state", ""),
        overdue=q.get("overdue", ""),
        mine=q.get("mine", ""),
        sort=q.get("sort", "") or "severity",
    )
    if f.state and f.state not in STOP_VALUES:
        problems.append(f"state must be one of {', '.join(STOP_VALUES)}")
    for flag in ("overdue", "mine"):
        if getattr(f, flag) not in ("", "1"):
            problems.append(f"{flag} is 1 or empty")
    if f.sort not in SORTS:
        problems.append(f"sort is one of {', '.join(SORTS)}")
    size = q.get("size", "")
    if size:
        number = whole_number(size, 1, MAX_SIZE)
        if number is None:
            problems.append(f"size is a whole number from 1 to {MAX_SIZE}")
        else:
            f.size = number
    after = q.get("after", "")
    if after:
        f.after = decode_key(after)
        if f.after is None:
            problems.append("after is not a page cursor of this inbox (start again from page 1)")
    return f, problems


def encode_key(key: PageKey) -> str:
    raw = json.dumps([key.severity, format_time(key.since), key.id], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_key(text: str) -> PageKey | None:
    """The key a cursor names, or ``None`` when it is not one."""
    if len(text) > 1000:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        sev, since, item_id = json.loads(raw)
        if not isinstance(sev, int) or not 0 <= sev < len(SEVERITIES):
            return None
        if not isinstance(item_id, str) or not isinstance(since, str):
            return None
        return PageKey(sev, parse_time(since), item_id)
    except (binascii.Error, ValueError, TypeError):
        return None


@dataclass
class Page:
    rows: list[StopRow]
    counts: dict[str, StateCount]
    total: int
    next_key: PageKey | None  # the cursor of the next page (None: this is the last one)
    counted_all: bool = True  # False: "needs me" counted only the first SCAN_LIMIT rows
    scanned: int = 0
    partial: bool = False  # "needs me" stopped reading before the page was full


def scan(read: Callable[[StopQuery], list[StopRow]], query: StopQuery) -> Iterator[StopRow]:
    """Every row of ``query`` from its cursor on, read in chunks."""
    query = replace(query, limit=SCAN_CHUNK)
    while True:
        chunk = read(query)
        yield from chunk
        if len(chunk) < SCAN_CHUNK:
            return
        query = replace(query, after=chunk[-1].key)


def plain_page(
    read: Callable[[StopQuery], list[StopRow]],
    counts: Callable[[StopQuery], list[StateCount]],
    query: StopQuery,
) -> Page:
    """One keyset page, one row more read to know whether another page follows."""
    rows = read(replace(query, limit=query.limit + 1))
    more = len(rows) > query.limit
    rows = rows[: query.limit]
    found = {c.state: c for c in counts(query)}
    total = sum(c.count for c in found.values())
    return Page(rows, found, total, rows[-1].key if more and rows else None)


def mine_page(
    read: Callable[[StopQuery], list[StopRow]], query: StopQuery, keep: Callable[[StopRow], bool]
) -> Page:
    """A page of the rows ``keep`` allows (the visitor's rights), and their counts, reading at
    most SCAN_LIMIT rows for each."""
    kept: dict[str, bool] = {}

    def keeps(row: StopRow) -> bool:
        if row.item.id not in kept:
            kept[row.item.id] = keep(row)
        return kept[row.item.id]

    counted: dict[str, int] = {}
    oldest: dict[str, datetime] = {}
    counted_all = True
    for scanned, row in enumerate(scan(read, replace(query, after=None)), start=1):
        if scanned > SCAN_LIMIT:
            counted_all = False
            break
        if keeps(row):
            state = row.item.state.value
            counted[state] = counted.get(state, 0) + 1
            if state not in oldest or row.since < oldest[state]:
                oldest[state] = row.since
    rows: list[StopRow] = []
    read_rows = 0
    last: StopRow | None = None
    more = False
    for row in scan(read, query):
        read_rows += 1
        if len(rows) == query.limit:
            more = True  # a row after a full page: another page may follow
            break
        last = row
        if keeps(row):
            rows.append(row)
        if read_rows >= SCAN_LIMIT:
            more = True
            break
    partial = more and len(rows) < query.limit
    found = {s: StateCount(s, n, oldest.get(s)) for s, n in counted.items()}
    next_key = None if not more or last is None else last.key
    total = sum(counted.values())
    return Page(rows, found, total, next_key, counted_all, read_rows, partial)
