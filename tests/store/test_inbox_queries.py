"""The inbox's queries of the insights port, on SQLite and on PostgreSQL: keyset pages that stay
put while items arrive, search, severity order, the time an item entered its stop state (which
an approval short of the count leaves alone), the overdue filter and stuck work."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from helpers import T0, decide_at, discover, stay, stop_in_exception
from stopline.core.commands import Approve, Observe, Propose
from stopline.core.decide import decide
from stopline.core.policy import ApprovalPolicy, ApprovalRule, Policy
from stopline.core.records import Actor, Item
from stopline.core.step import Context
from stopline.store import Store, raw
from stopline.store.insights import MAX_PAGE, StopQuery, StopRow

S = timedelta(seconds=1)
TWO = Policy(approval=ApprovalPolicy(default=ApprovalRule(roles=("approver",), approvals=2)))


def awaiting(
    store: Store, key: str, at: datetime, severity: str | None = None, automation: str = "auto"
) -> Item:
    """``automation/key`` through observe and propose (needing two approvals) at ``at``."""
    discover(store, key, at=at, automation=automation, policy=TWO)
    item = store.claim("w1", at, 30.0)
    assert item is not None and item.key == key
    observed = decide_at(item, Observe("w1", item.lease_token, {"cpu": 99}, at), at, TWO)
    assert observed.after is not None and store.apply(observed)
    item = store.claim("w1", at, 30.0)
    assert item is not None and item.key == key
    command = Propose("w1", item.lease_token, "restart", "api", {"n": 1}, "cpu high", severity)
    proposed = decide_at(item, command, at, TWO)
    assert proposed.after is not None and store.apply(proposed), proposed.reasons
    return proposed.after


def walk(store: Store, query: StopQuery) -> list[StopRow]:
    """Every page of ``query``, in order."""
    rows: list[StopRow] = []
    while True:
        page = store.insights.stop_page(query)
        rows += page
        if len(page) < query.limit:
            return rows
        query = StopQuery(**{**query.__dict__, "after": page[-1].key})


def ids(rows: list[StopRow]) -> list[str]:
    return [r.item.id for r in rows]


def test_keyset_pages_cover_every_item_once_while_items_arrive(store: Store) -> None:
    for n in range(12):
        stop_in_exception(store, f"k{n:02d}", T0 + n * S)
    query = StopQuery(limit=5)
    first = store.insights.stop_page(query)
    assert [r.item.key for r in first] == ["k00", "k01", "k02", "k03", "k04"]
    # New items arrive between pages: older-looking keys, and one stopped at the same time
    # as the last row of the page (the id breaks the tie).
    stop_in_exception(store, "a-late", T0 + 20 * S)
    stop_in_exception(store, "k04b", T0 + 4 * S)
    rest = walk(store, StopQuery(limit=5, after=first[-1].key))
    keys = [r.item.key for r in first + rest]
    early, late = [f"k{n:02d}" for n in range(5)], [f"k{n:02d}" for n in range(5, 12)]
    assert keys == [*early, "k04b", *late, "a-late"]
    assert len(set(keys)) == len(keys)


def test_newest_and_severity_orders(store: Store) -> None:
    awaiting(store, "low", T0, "low")
    awaiting(store, "crit", T0 + S, "critical")
    awaiting(store, "plain", T0 + 2 * S)
    awaiting(store, "crit2", T0 + 3 * S, "critical")
    stop_in_exception(store, "exc", T0 + 4 * S)
    newest = walk(store, StopQuery(sort="newest", limit=2))
    assert [r.item.key for r in newest] == ["exc", "crit2", "plain", "crit", "low"]
    by_severity = walk(store, StopQuery(sort="severity", limit=2))
    assert [(r.item.key, r.severity) for r in by_severity] == [
        ("crit", "critical"),
        ("crit2", "critical"),
        ("plain", "normal"),
        ("exc", "normal"),
        ("low", "low"),
    ]


def test_search_matches_key_automation_and_the_reason(store: Store) -> None:
    stop_in_exception(store, "INC-7", T0)  # why: "unclear", owner "ops"
    awaiting(store, "cert-prod", T0 + S, "critical", automation="certs")
    found = {
        text: [r.item.key for r in store.insights.stop_page(StopQuery(text=text))]
        for text in ("inc-7", "CERTS/", "unclear", "cpu HIGH", "restart", "nothing like it")
    }
    assert found == {
        "inc-7": ["INC-7"],
        "CERTS/": ["cert-prod"],
        "unclear": ["INC-7"],
        "cpu HIGH": ["cert-prod"],
        "restart": ["cert-prod"],
        "nothing like it": [],
    }
    counts = store.insights.stop_counts(StopQuery(text="unclear"))
    assert [(c.state, c.count) for c in counts] == [("exception", 1)]
    # Characters with a meaning in LIKE patterns are plain text here.
    assert store.insights.stop_page(StopQuery(text="%")) == []
    assert store.insights.stop_page(StopQuery(text="_")) == []


def test_a_partial_approval_keeps_the_time_the_item_stopped(store: Store) -> None:
    item = awaiting(store, "two", T0)
    actors = {"ann": Actor("ann", frozenset({"approver"}))}
    digest = item.doc("proposal")["digest"]
    decision = decide(item, Approve("ann", digest), Context(T0 + 60 * S, TWO, actors))
    assert decision.after is not None and store.apply(decision)
    assert decision.after.state.value == "awaiting_approval"
    assert decision.after.updated_at == T0 + 60 * S
    assert store.insights.stopped_since(item.id) == T0
    (row,) = store.insights.stop_page(StopQuery())
    assert row.since == T0
    # An event that leaves the item in its state (a reconcile) keeps it too.
    exc = stop_in_exception(store, "e", T0 + 5 * S)
    stay(store, exc, T0 + 90 * S)
    assert store.insights.stopped_since(exc.id) == T0 + 5 * S
    assert store.insights.stopped_since("no-such-item") is None


def test_overdue_filter_and_counts_use_the_stop_time(store: Store) -> None:
    old = stop_in_exception(store, "old", T0)
    stop_in_exception(store, "new", T0 + 100 * S)
    stay(store, old, T0 + 200 * S)
    before = StopQuery(stopped_before=T0 + 50 * S)
    assert [r.item.key for r in store.insights.stop_page(before)] == ["old"]
    (count,) = store.insights.stop_counts(before)
    assert (count.state, count.count, count.oldest) == ("exception", 1, T0)
    assert store.insights.stop_page(StopQuery(state="awaiting_approval")) == []
    assert [r.item.key for r in store.insights.stop_page(StopQuery(automation="auto"))] == [
        "old",
        "new",
    ]


def test_page_size_is_bounded(store: Store) -> None:
    """A page holds at most MAX_PAGE rows and at least one, whatever it asks for."""
    stop_in_exception(store, "one", T0)
    stop_in_exception(store, "two", T0 + S)
    assert len(store.insights.stop_page(StopQuery(limit=10**9))) == 2
    assert len(store.insights.stop_page(StopQuery(limit=0))) == 1
    assert len(store.insights.stop_page(StopQuery(limit=-5))) == 1
    assert MAX_PAGE <= 500


def test_a_row_without_its_stop_time_shows_its_creation_time(store: Store) -> None:
    """A row written around the store with no stop time (``state_since``) is listed since it
    was created, not dropped and not dated now."""
    item = stop_in_exception(store, "bare", T0 + 30 * S)
    with raw.writing(store) as cur:
        cur.execute("UPDATE items SET state_since = NULL")
    (row,) = store.insights.stop_page(StopQuery())
    assert row.item.id == item.id and row.since == item.created_at == T0 + 30 * S


def test_stuck_work_lists_work_items_that_have_not_moved(store: Store) -> None:
    stop_in_exception(store, "stopped", T0)  # stopped, not work
    for n in range(5):
        discover(store, f"w{n}", at=T0 + n * S)
    before = T0 + 3 * S
    assert store.insights.stuck_count(before) == 3
    first = store.insights.stuck_work(before, limit=2)
    assert [i.key for i in first] == ["w0", "w1"]
    rest = store.insights.stuck_work(before, (first[-1].updated_at, first[-1].id), limit=2)
    assert [i.key for i in rest] == ["w2"]
    assert store.insights.stuck_work(T0) == []


def test_each_row_keeps_the_inbox_keys_its_events_and_data_give(store: Store) -> None:
    """``state_since`` and ``severity_rank`` (migration 8) are written with every decision and
    agree with the events and the data they derive from; ``verify`` recomputes them."""
    from stopline.core.search import search_text
    from stopline.core.verify import entered_at, stop_key_findings
    from stopline.verification import verify_store

    two = awaiting(store, "two", T0, "high")
    actors = {"ann": Actor("ann", frozenset({"approver"}))}
    approve = Approve("ann", two.doc("proposal")["digest"])
    half = decide(two, approve, Context(T0 + 60 * S, TWO, actors))
    assert half.after is not None and store.apply(half)
    exc = stop_in_exception(store, "e", T0 + 5 * S)
    stay(store, exc, T0 + 90 * S)
    discover(store, "fresh", at=T0 + 7 * S)
    keys = store.stop_keys()
    expected = {}
    fresh = store.find("auto", "fresh")
    assert fresh is not None
    for item in (two, exc, fresh):
        since = entered_at(item, store.history(item.id))
        expected[item.id] = (since, 3 if item is two else 2, search_text(item))
    assert keys == expected
    assert keys[two.id][:2] == (T0, 3) and keys[exc.id][:2] == (T0 + 5 * S, 2)
    assert keys[exc.id][2] is not None and keys[exc.id][2].startswith("auto/e ")
    assert keys[fresh.id][2] is None  # work: never searched
    assert not [f for f in verify_store(store).findings if f.reason == "stop_key_mismatch"]
    # Each key, edited alone, is found.
    item = store.get(exc.id)
    assert item is not None
    text = keys[exc.id][2]
    moved = stop_key_findings(item, store.history(exc.id), T0, 2, text)
    assert [(f.field, f.reason) for f in moved] == [("state_since", "stop_key_mismatch")]
    raised = stop_key_findings(item, store.history(exc.id), T0 + 5 * S, 4, text)
    assert [(f.field, f.reason) for f in raised] == [("severity_rank", "stop_key_mismatch")]
    hidden = stop_key_findings(item, store.history(exc.id), T0 + 5 * S, 2, "")
    assert [(f.field, f.reason) for f in hidden] == [("search_text", "stop_key_mismatch")]


def test_a_page_reads_the_index_of_stopped_items_not_every_row(tmp_path: Path) -> None:
    """The inbox's pages follow partial indexes over stopped items (SQLite's plan names them;
    no full scan of ``items``), so a page's cost does not grow with the backlog."""
    from stopline.store import open_store, raw
    from stopline.store.queries import load

    store = open_store(f"sqlite:///{tmp_path / 'plan.db'}")
    try:
        params = {
            "state": None,
            "automation": None,
            "text": None,
            "stopped_before": None,
            "after_sev": None,
            "after_since": None,
            "after_id": None,
            "limit": 50,
        }
        expected = {
            "stop_page_oldest": "items_stop_since",
            "stop_page_newest": "items_stop_since",
            "stop_page_severity": "items_stop_severity",
        }
        queries = load("sqlite", file="insights")
        with raw.reading(store) as cur:
            for name, index in expected.items():
                sql = queries[name]
                cur.execute("EXPLAIN QUERY PLAN " + sql, params)
                plan = " / ".join(str(r["detail"]) for r in cur.fetchall())
                assert f"USING INDEX {index}" in plan, plan
                assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan
    finally:
        store.close()


def test_the_upgrade_fills_the_inbox_keys_from_the_events(blank_store_url: str) -> None:
    """Migration 8 on a database written before it: each row's ``state_since`` is the time of
    its last event that changed the state and its ``severity_rank`` that of its data."""
    from dataclasses import replace

    from stopline.core.commands import Discover
    from stopline.core.frozen import freeze, thaw
    from stopline.store import open_store, raw
    from store.test_documents import insert_inline

    store = open_store(blank_store_url, migrate=False, check=False)
    try:
        raw.migrate_to(store, 7)
        plain = decide_at(None, Discover("plain", "auto", "k1", {"n": 1}), T0)
        insert_inline(store, plain)
        high = decide_at(None, Discover("high", "auto", "k2", {"n": 2}), T0 + S)
        assert high.after is not None
        data = freeze({**thaw(high.after.data), "severity": "high"})
        insert_inline(store, replace(high, after=replace(high.after, data=data)))
        assert store.migrate() == [8, 9, 10, 11]
        assert store.stop_keys() == {"plain": (T0, 2, None), "high": (T0 + S, 3, None)}
    finally:
        store.close()


def test_migration_9_fills_the_search_line_of_stopped_rows_written_before_it(
    store_url: str,
) -> None:
    """Rows of stopped items written before migration 9 (no ``search_text``; the proposal a
    document stored apart) get the line the writer of the row makes, from their data with
    the documents put back; a search then finds them by it and ``verify`` finds nothing."""
    from stopline.core.search import search_text
    from stopline.store import open_store, raw
    from stopline.verification import verify_store
    from store.test_documents import stored_data

    store = open_store(store_url)
    try:
        item = awaiting(store, "big", T0)
        rationale = "Überlast " + "x" * 400  # the proposal a document of its own (256 B on)
        discover(store, "k2", at=T0, policy=TWO)
        claimed = store.claim("w1", T0, 30.0)
        assert claimed is not None
        observed = decide_at(claimed, Observe("w1", claimed.lease_token, {}, T0), T0, TWO)
        assert observed.after is not None and store.apply(observed)
        claimed = store.claim("w1", T0, 30.0)
        assert claimed is not None
        command = Propose("w1", claimed.lease_token, "restart", "api", {"n": 1}, rationale, None)
        proposed = decide_at(claimed, command, T0, TWO)
        assert proposed.after is not None and store.apply(proposed)
        assert set(stored_data(store, proposed.after.id)["proposal"]) == {"$doc"}
        expected = {i.id: search_text(i) for i in (item, proposed.after)}
        with raw.writing(store) as cur:  # the database as a store before migration 9 left it
            cur.execute("ALTER TABLE items DROP COLUMN search_text")
            cur.execute("DELETE FROM schema_migrations WHERE version = 9")
    finally:
        store.close()
    upgraded = open_store(store_url, migrate=False, check=False)
    try:
        assert upgraded.migrate() == [9]
        keys = upgraded.stop_keys()
        assert {i: keys[i][2] for i in expected} == expected
        assert "überlast" in (expected[proposed.after.id] or "")
        hits = upgraded.insights.stop_page(StopQuery(text="überlast x"))
        assert [r.item.key for r in hits] == ["k2"]
        assert not [f for f in verify_store(upgraded).findings if f.reason == "stop_key_mismatch"]
    finally:
        upgraded.close()


def test_a_search_ignores_case_beyond_ascii(store: Store) -> None:
    """The line is lower-cased by Python as the search text is, so a search ignores the case
    of every letter, not of ASCII letters alone (SQLite's ``LOWER`` knows no others)."""
    awaiting(store, "ÉTÉ-1", T0)
    awaiting(store, "ete-2", T0 + S)
    found = {
        text: [r.item.key for r in store.insights.stop_page(StopQuery(text=text))]
        for text in ("été", "ÉTÉ", "ete-", "ÉtÉ-1")
    }
    assert found == {"été": ["ÉTÉ-1"], "ÉTÉ": ["ÉTÉ-1"], "ete-": ["ete-2"], "ÉtÉ-1": ["ÉTÉ-1"]}
