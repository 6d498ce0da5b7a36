"""The inbox's list without a server: the query string's filters and their problems, page
cursors, and the "needs me" page over a fake reader (bounded reads, counts, where it stops)."""

from __future__ import annotations

from datetime import timedelta

from starlette.datastructures import QueryParams

from helpers import T0
from stopline.core.records import Item
from stopline.core.states import State
from stopline.store.insights import PageKey, StopQuery, StopRow
from stopline.web import listing


def parse(text: str) -> tuple[listing.Filters, list[str]]:
    return listing.parse(QueryParams(text))


def test_filters_default_and_round_trip() -> None:
    f, problems = parse("")
    assert problems == [] and f.sort == "severity" and f.size == listing.PAGE_SIZE
    assert f.query() == ""
    f, problems = parse("q=+cert+&state=exception&mine=1&sort=oldest&size=20")
    assert problems == []
    assert (f.q, f.state, f.mine, f.sort, f.size) == ("cert", "exception", "1", "oldest", 20)
    again, _ = parse(f.query())
    assert again == f


def test_every_bad_value_is_a_problem_never_a_guess() -> None:
    _, problems = parse("state=closed&mine=2&overdue=x&sort=up&size=201&after=%%%&q=" + "x" * 201)
    assert len(problems) == 7
    assert parse("size=abc")[1] and parse("size=-1")[1] and not parse("size=200")[1]


def test_cursors_round_trip_and_anything_else_is_not_one() -> None:
    key = PageKey(4, T0 + timedelta(microseconds=7), "itm_abc.def")
    assert listing.decode_key(listing.encode_key(key)) == key
    for junk in ("", "x", "W10", "WzksIjIwMjYiLCJhIl0", "eyJhIjoxfQ", "A" * 1001):
        assert listing.decode_key(junk) is None, junk


def rows(n: int) -> list[StopRow]:
    found = []
    for i in range(n):
        at = T0 + timedelta(seconds=i)
        item = Item(f"id{i:05d}", "auto", f"k{i:05d}", State.EXCEPTION, 1, 1, "", at, at, 0, 3, at)
        found.append(StopRow(item, at, "normal"))
    return found


class Reader:
    """A store's stop_page over a list, counting the rows it hands out."""

    def __init__(self, all_rows: list[StopRow]) -> None:
        self.rows, self.handed = all_rows, 0

    def __call__(self, query: StopQuery) -> list[StopRow]:
        start = 0
        if query.after is not None:
            start = next(i + 1 for i, r in enumerate(self.rows) if r.item.id == query.after.id)
        page = self.rows[start : start + query.limit]
        self.handed += len(page)
        return page


def test_needs_me_pages_count_and_stop_reading_at_the_bound() -> None:
    read = Reader(rows(2500))
    keep = lambda row: int(row.item.id[2:]) % 3 == 0  # noqa: E731
    page = listing.mine_page(read, StopQuery(sort="oldest", limit=10), keep)
    assert [r.item.id for r in page.rows] == [f"id{i:05d}" for i in range(0, 30, 3)]
    assert page.counted_all is False and page.total == 667  # of the first 2000 rows
    assert page.next_key is not None and not page.partial
    follow = listing.mine_page(read, StopQuery(sort="oldest", limit=10, after=page.next_key), keep)
    assert follow.rows[0].item.id == "id00030"
    nothing = listing.mine_page(Reader(rows(2500)), StopQuery(limit=10), lambda row: False)
    assert nothing.rows == [] and nothing.partial and nothing.scanned == listing.SCAN_LIMIT
    assert nothing.next_key == PageKey(2, T0 + timedelta(seconds=1999), "id01999")
    small = listing.mine_page(Reader(rows(5)), StopQuery(limit=10), lambda row: True)
    assert len(small.rows) == 5 and small.next_key is None and small.total == 5


def test_a_plain_page_reads_one_row_past_its_size() -> None:
    read = Reader(rows(600))
    page = listing.plain_page(read, lambda q: [], StopQuery(limit=50))
    assert len(page.rows) == 50 and read.handed == 51 and page.next_key == page.rows[-1].key
