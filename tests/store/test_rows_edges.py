"""What a store reads back is what its rows decode to, on SQLite and PostgreSQL. A store keeps
the records it decoded by every column of their rows, and the records it wrote (so that the
guard's next read finds what was checked already) only when they are exactly what the rows
read back as, frozen to the bottom: an event edited in any one column reads, to the store
that read it before, as a store that never read it reads it; a record handed in by a caller
that still holds a mutable part of it, or a time in another zone, is read back from its rows,
so nothing the caller does afterwards changes what any reader is given; every record decoded
is read-only to the bottom; and documents are believed stored only once a write that stored
them has committed."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from helpers import T0, decide_at, discover
from integrity.attacker import Attacker
from stopline.core.commands import Observe
from stopline.core.decision import Decision, Outcome
from stopline.core.frozen import deeply_frozen, freeze
from stopline.core.records import Event, Item
from stopline.store import Store, open_store

S = timedelta(seconds=1)


def _typed(value: Any) -> Any:
    """``value`` with the type of every part beside it, to the bottom: two reads give equal
    results only when they are the same records, to the type (``FrozenDict`` or ``dict``,
    tuple or list) and to the time zone of each time."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return type(value).__name__, tuple((f.name, _typed(getattr(value, f.name))) for f in fields)
    if isinstance(value, Mapping):
        return type(value).__name__, tuple((k, _typed(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return type(value).__name__, tuple(_typed(v) for v in value)
    if isinstance(value, datetime):
        return "datetime", value.isoformat(), repr(value.tzinfo)
    return type(value).__name__, value


def _claimed(store: Store) -> Item:
    discover(store, "k1")
    item = store.claim("w1", T0, 30)
    assert item is not None
    return item


def _written(store: Store, item: Item, event: Event, data: Any = None) -> Decision:
    """A decision that appends ``event`` to ``item`` (leaving its state) and gives it ``data``,
    written through the store's own compare-and-set."""
    after = replace(
        item,
        version=item.version + 1,
        seq=event.seq,
        head=event.hash,
        updated_at=event.at,
        data=item.data if data is None else data,
    )
    decision = Decision(Outcome.APPLIED, (), item.id, item.state, item, after, event)
    assert store.apply(decision)
    return decision


def _event(item: Item, **changes: Any) -> Event:
    fields: dict[str, Any] = {
        "item_id": item.id,
        "seq": item.seq + 1,
        "at": T0 + S,
        "command": "reconcile",
        "actor": "olivia",
        "from_state": item.state,
        "to_state": item.state,
        "reasons": ("kept",),
        "digests": freeze({}),
        "detail": freeze({}),
        "prev_hash": item.head,
    }
    return Event.sealed(**{**fields, **changes})  # as the core makes them: frozen, in UTC


def _at_in_another_zone(item: Item) -> tuple[Event, Any, Callable[[], None]]:
    at = (T0 + S).astimezone(timezone(timedelta(hours=2)))
    return _event(item, at=at), None, lambda: None


def _reasons_a_list(item: Item) -> tuple[Event, Any, Callable[[], None]]:
    reasons = ["kept"]
    return _event(item, reasons=reasons), None, lambda: reasons.append("forged")


def _digests_mutable(item: Item) -> tuple[Event, Any, Callable[[], None]]:
    digests: dict[str, Any] = {"note": "n1"}
    return _event(item, digests=digests), None, lambda: digests.update(note="forged")


def _data_mutable(item: Item) -> tuple[Event, Any, Callable[[], None]]:
    data: dict[str, Any] = {"input": {}, "note": ["n1"]}
    return _event(item), data, lambda: data["note"].append("forged")


@pytest.mark.parametrize(
    "handed",
    [_at_in_another_zone, _reasons_a_list, _digests_mutable, _data_mutable],
    ids=["time-in-another-zone", "reasons-a-list", "digests-mutable", "data-mutable"],
)
def test_what_a_writer_handed_in_is_read_back_as_its_rows_decode(
    store: Store, store_url: str, handed: Callable[[Item], tuple[Event, Any, Callable[[], None]]]
) -> None:
    """A record not exactly what its rows read back as (a time in another zone, a list where
    the row reads a tuple, a mapping its caller can still change) is not kept as the read of
    those rows: the writer reads what any other store reads, and a change the caller makes to
    what it handed in afterwards reaches no reader."""
    item = _claimed(store)
    event, data, change = handed(item)
    _written(store, item, event, data)
    change()
    fresh = open_store(store_url)
    try:
        assert _typed(store.history(item.id)) == _typed(fresh.history(item.id))
        assert _typed(store.current(item.id)) == _typed(fresh.current(item.id))
        assert "forged" not in repr(store.current(item.id))
    finally:
        fresh.close()


# Each column of an event row, edited behind the store's back (on the last event): the value
# it is given, per dialect where the two differ.
EVENT_EDITS = {
    "seq": "seq = seq + 10",
    "at": {
        "sqlite": "at = '2026-03-01T12:00:09.000000Z'",
        "postgres": "at = at + interval '1 second'",
    },
    "command": "command = command || 'x'",
    "actor": "actor = 'mallory'",
    "from_state": "from_state = 'exception'",
    "to_state": "to_state = 'exception'",
    "reasons": "reasons = '[\"approved\"]'",
    "digests": 'digests = \'{"seal":"x"}\'',
    "detail": "detail = '{}'",
    "prev_hash": "prev_hash = prev_hash || 'x'",
    "hash": "hash = hash || 'x'",
}


@pytest.mark.parametrize("column", sorted(EVENT_EDITS))
def test_an_event_edited_in_any_column_reads_as_a_fresh_store_reads_it(
    store: Store, store_url: str, column: str
) -> None:
    """A store keeps the events it decoded by their rows' text, every column of it: an edit of
    any one column is read, by the store that read (and wrote) the row before, as a store that
    never read it reads it."""
    item = _claimed(store)
    decision = decide_at(item, Observe("w1", item.lease_token, {"n": 1}, T0 + S), T0 + S)
    assert store.apply(decision)
    before = _typed((store.history(item.id), store.current(item.id)))
    edit = EVENT_EDITS[column]
    attacker = Attacker(store_url)
    try:
        change = edit if isinstance(edit, str) else edit[attacker.dialect]
        assert attacker.sql(f"UPDATE events SET {change} WHERE seq = 2", {}) == 1
    finally:
        attacker.close()
    fresh = open_store(store_url)
    try:
        read = _typed((store.history(item.id), store.current(item.id)))
        assert read == _typed((fresh.history(item.id), fresh.current(item.id)))
        assert read != before
    finally:
        fresh.close()


def test_every_record_read_is_frozen_to_the_bottom(store: Store, store_url: str) -> None:
    """Records decoded from rows (by a store that wrote none of them) are read-only to the
    bottom: a store hands the record it decoded once to every later reader of the same row, so
    a part one caller could change would change it for all."""
    item = _claimed(store)
    decision = decide_at(
        item, Observe("w1", item.lease_token, {"n": [1, {"k": [2]}]}, T0 + S), T0 + S
    )
    observed = decision.after
    assert observed is not None and store.apply(decision)
    nested = _event(observed, at=T0 + 2 * S, digests={"a": {"b": [1]}}, detail={"c": [{"d": 1}]})
    _written(store, observed, nested)
    fresh = open_store(store_url)
    try:
        history = fresh.history(item.id)
        assert len(history) == 3
        for event in history:
            assert type(event.reasons) is tuple
            assert deeply_frozen(event.digests, as_stored=True)
            assert deeply_frozen(event.detail, as_stored=True)
            assert event.at.tzinfo is not None and event.at.utcoffset() == timedelta(0)
        read = fresh.get(item.id)
        assert read is not None and deeply_frozen(read.data, as_stored=True)
    finally:
        fresh.close()


def _observe(item: Item, observation: dict[str, Any]) -> Decision:
    decision = decide_at(item, Observe("w1", item.lease_token, observation, T0), T0)
    assert decision.outcome is Outcome.APPLIED
    return decision


def test_a_lost_decision_of_a_group_stores_no_document_and_claims_none(
    store: Store, store_url: str
) -> None:
    """A group decision whose compare-and-set lost wrote nothing, its new documents included:
    a later write of the same document must store it, so that every reader finds it (not only
    the writer, whose cache would otherwise hold a body the database never got)."""
    for key in ("a", "b", "c"):
        discover(store, key)
    a, b, c = store.claim_batch("w1", T0, 30, limit=3)
    large = {"rows": list(range(200))}  # stored apart, as a document
    assert store.apply(_observe(b, {"n": 1}))  # another write to b comes first
    assert store.apply_many([_observe(a, {"n": 1}), _observe(b, large)]) == [True, False]
    third = _observe(c, large)
    assert store.apply(third)
    assert store.document_findings() == []
    fresh = open_store(store_url)
    try:
        assert fresh.get(c.id) == third.after
        assert fresh.document_findings() == []
    finally:
        fresh.close()
