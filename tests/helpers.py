"""Test helpers shared by the suites: a full dump of a store, and items made by the real core."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from stopline.core.commands import Command, Discover
from stopline.core.decide import decide
from stopline.core.decision import Decision, Outcome
from stopline.core.policy import Policy
from stopline.core.records import Event, Item
from stopline.core.states import State
from stopline.core.step import Context
from stopline.store import Store, open_store, raw

T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)

_TABLES = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    "postgres": (
        "SELECT table_name AS name FROM information_schema.tables"
        " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
    ),
}
# the audit of refusals lives apart from everything else; every worker writes its heartbeat
UNDUMPED = frozenset({"refusals", "worker_heartbeats"})

Row = tuple[tuple[str, Any], ...]


def _plain(value: Any) -> Any:
    """A comparable form of a column value (parsed JSON as canonical text, times as ISO)."""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def dump(
    store: Store, *, without: Iterable[str] = UNDUMPED, sequences: bool = False
) -> dict[str, list[Row]]:
    """Every row of every table except ``without``, as sorted ``(column, value)`` tuples.

    Two dumps are equal exactly when no such row was added, removed or changed. ``sequences``
    (SQLite): keep ``sqlite_sequence`` too, without the counters of the tables left out.
    """
    left_out = frozenset(without)
    out: dict[str, list[Row]] = {}
    with raw.reading(store) as cur:  # the dump reads the tables directly
        cur.execute(_TABLES[store.dialect])
        names = sorted(str(r["name"]) for r in cur.fetchall())
        if sequences and store.dialect == "sqlite":
            cur.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_sequence'")
            names += [str(r["name"]) for r in cur.fetchall()]
        for name in names:
            if name in left_out:
                continue
            cur.execute(f'SELECT * FROM "{name}"')
            rows = [tuple(sorted((k, _plain(v)) for k, v in dict(r).items())) for r in cur]
            if name == "sqlite_sequence":  # a left-out table's counter belongs with it
                rows = [r for r in rows if dict(r)["name"] not in left_out]
            out[name] = sorted(rows, key=repr)
    return out


def dump_url(
    url: str, *, without: Iterable[str] = UNDUMPED, sequences: bool = False
) -> dict[str, list[Row]]:
    """:func:`dump` of the database at ``url``, opened without migrating, checking or creating
    it, and closed again."""
    store = open_store(url, migrate=False, check=False, create=False)
    try:
        return dump(store, without=without, sequences=sequences)
    finally:
        store.close()


def count(store: Store, table: str) -> int:
    """The number of rows in ``table``."""
    with raw.reading(store) as cur:
        cur.execute(f'SELECT COUNT(*) AS n FROM "{table}"')
        return int(cur.fetchone()["n"])


def decide_at(
    item: Item | None, command: Command, now: datetime, policy: Policy | None = None
) -> Decision:
    """``decide()`` with the default policy (or ``policy``) at ``now``."""
    return decide(item, command, Context(now, policy or Policy()))


def insert_old(store: Store, decision: Decision) -> None:
    """Write a discovery as a store of schema version 7 or older did: the item row without the
    columns of later migrations (8 and 9) (its documents inline, no inbox keys), its event and, where the
    schema has the ledger (version 4 on), its ledger entry. For tests of a migration: the
    store's own ``insert`` writes the columns of the newest schema."""
    from stopline.core.ledger import CREATE

    assert decision.after is not None and decision.event is not None
    insert = store.q["insert_item"]  # type: ignore[attr-defined]
    for later in (",\n    search_text", ",\n    :search_text", ",\n    %(search_text)s"):
        insert = insert.replace(later, "")  # migration 9's column
    for new in (", state_since, severity_rank", ", :created_at, :severity_rank"):
        insert = insert.replace(new, "")
    insert = insert.replace(", %(created_at)s, %(severity_rank)s)", ")")
    with raw.writing(store) as cur:
        cur.execute(insert, raw.item_row(store, decision.after))
        cur.execute(store.q["insert_event"], raw.event_row(store, decision.event))  # type: ignore[attr-defined]
        if store.schema_version() >= 4:
            raw.append_ledger_event(store, cur, CREATE, decision.event)


def discover(
    store: Store,
    key: str,
    *,
    at: datetime = T0,
    automation: str = "auto",
    policy: Policy | None = None,
    data: Mapping[str, Any] | None = None,
) -> Item:
    """Discover ``automation/key`` at ``at`` and write it; returns the new item."""
    decision = decide_at(
        None, Discover(f"{automation}-{key}", automation, key, dict(data or {})), at, policy
    )
    assert decision.after is not None and store.insert(decision)
    return decision.after


def stop_in_exception(store: Store, key: str, at: datetime, automation: str = "auto") -> Item:
    """Discover ``automation/key``, claim it and stop it in ``exception`` at ``at``, through
    the real core; returns the stopped item."""
    from stopline.core.commands import NeedsEyes

    discover(store, key, at=at, automation=automation)
    item = store.claim("w1", at, 30.0)
    assert item is not None and item.key == key
    decision = decide_at(item, NeedsEyes("w1", item.lease_token, "ops", "unclear"), at)
    assert decision.after is not None and store.apply(decision)
    return decision.after


def event_after(
    item: Item,
    at: datetime,
    to: State,
    command: str,
    reasons: tuple[str, ...] = (),
    actor: str = "olivia",
) -> Event:
    """The event after ``item``'s head: ``command`` by ``actor`` moving it to ``to``."""
    return Event.sealed(
        item_id=item.id,
        seq=item.seq + 1,
        at=at,
        command=command,
        actor=actor,
        from_state=item.state,
        to_state=to,
        reasons=reasons,
        digests={},
        detail={},
        prev_hash=item.head,
    )


def reconcile_event(item: Item, at: datetime, actor: str = "olivia") -> Event:
    """The event after ``item``'s head that leaves it in its state (a reconcile)."""
    return event_after(item, at, item.state, "reconcile", actor=actor)


def insert_by_hand(store: Store, event: Event) -> None:
    """Write ``event`` into the events table around the store's methods (the row unchanged)."""
    with raw.writing(store) as cur:
        cur.execute(store.q["insert_event"], raw.event_row(store, event))  # type: ignore[attr-defined]


def move(
    store: Store,
    item: Item,
    at: datetime,
    to: State,
    command: str = "resolve",
    reasons: tuple[str, ...] = (),
) -> Item:
    """Append an event of ``command`` that moves ``item`` to ``to`` at ``at`` (the store does
    not judge transitions); returns the item as written."""
    event = event_after(item, at, to, command, reasons)
    after = replace(
        item, state=to, version=item.version + 1, seq=event.seq, head=event.hash, updated_at=at
    )
    assert store.apply(Decision(Outcome.APPLIED, (), item.id, to, item, after, event))
    return after


def stay(store: Store, item: Item, at: datetime) -> None:
    """Append an event that leaves a stopped item in its state (the store does not judge
    transitions; the core's reconcile of an exception is such an event)."""
    move(store, item, at, item.state, "reconcile")


def registry_outcome(store: Any) -> Any:
    """What a read of the registry gives: its findings and actors, or the error it raised
    (an edit behind the store may leave a row the fold cannot read)."""
    try:
        registry = store.registry()
    except Exception as error:
        return type(error).__name__
    return sorted(f.text() for f in registry.findings), sorted(registry.actors)


T = TypeVar("T")


def in_thread(run: Callable[..., T], *args: Any) -> T:
    """``run(*args)`` on a thread of its own: its result, or what it raised. For
    ``asyncio.run`` and ``anyio.run``, which refuse a thread where an event loop is marked
    running: the browser tests' session-long Playwright (its sync API) leaves that mark on the
    main thread of the test process that ran them, whatever runs there after."""
    result: list[T] = []
    raised: list[BaseException] = []

    def target() -> None:
        try:
            result.append(run(*args))
        except BaseException as error:
            raised.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join()
    if raised:
        raise raised[0]
    return result[0]


def waiting_for_advisory_lock(admin: Any, url: str) -> bool:
    """Whether a session on the PostgreSQL database of ``url`` waits for an advisory lock
    (``admin``: a connection to the server that reads ``pg_locks``)."""
    rows = admin.execute(
        "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
        " WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = %s",
        (url.rsplit("/", 1)[1],),
    ).fetchone()
    return bool(rows and rows[0])
