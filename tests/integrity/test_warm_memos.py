"""Tampering after a store has read the rows: what a process keeps of rows it read and checked
(``store/rows.py``: records by every column's value) never vouches for a row changed since.

The event memo is keyed by a row's values. A driver that reads a time in its session's zone
gives two equal, equally hashed times for the two instants of the hour repeated when the
clocks go back, so an event's ``at`` moved by that hour must still decode, and be checked,
afresh."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import quote
from zoneinfo import ZoneInfo

from helpers import discover
from stopline.core.integrity import head_findings
from stopline.core.verify import verify_item
from stopline.store import open_store
from stopline.store.rows import event_key

from .attacker import Attacker

LONDON = ZoneInfo("Europe/London")
# 2026-10-25: British Summer Time ends at 02:00 BST; 00:30 and 01:30 UTC are both 01:30 there
BEFORE_THE_FOLD = datetime(2026, 10, 25, 0, 30, 0, 123456, tzinfo=UTC)


def test_two_times_of_the_repeated_hour_are_two_keys() -> None:
    first = BEFORE_THE_FOLD.astimezone(LONDON)
    second = (BEFORE_THE_FOLD + timedelta(hours=1)).astimezone(LONDON)
    assert first == second and hash(first) == hash(second)  # what a raw key would conflate
    row = ("it-1", 1, first, "discover")
    moved = ("it-1", 1, second, "discover")
    assert event_key(row) != event_key(moved)
    assert event_key(row) == ("it-1", 1, BEFORE_THE_FOLD, "discover")


def test_a_time_in_utc_or_text_is_its_own_key() -> None:
    row = ("it-1", 1, BEFORE_THE_FOLD, "discover")
    assert event_key(row) is row
    text = ("it-1", 1, "2026-10-25T00:30:00.123456Z", "discover")
    assert event_key(text) is text


def test_an_event_moved_by_the_repeated_hour_is_found_by_a_warm_store(
    postgres_url: str,
) -> None:
    """The session in a zone with daylight saving (as a login or a server may set it): the
    store that read the event before it was moved finds it altered, as a fresh store does."""
    joiner = "&" if "?" in postgres_url else "?"
    url = f"{postgres_url}{joiner}options={quote('-c TimeZone=Europe/London')}"
    store = open_store(url)
    attacker = Attacker(url)
    try:
        item = discover(store, "k1", at=BEFORE_THE_FOLD)
        it, head, legacy = store.current(item.id)
        assert head_findings(it, head, legacy) == []
        assert verify_item(it, store.history(item.id)) == []
        moved = attacker.sql(
            "UPDATE events SET at = at + interval '1 hour' WHERE item_id = :id AND seq = 1",
            {"id": item.id},
        )
        assert moved == 1
        it, head, legacy = store.current(item.id)  # the same store: every memo warm
        found = head_findings(it, head, legacy) + verify_item(it, store.history(item.id))
        assert "event_altered" in {f.reason for f in found}
        assert head.at == BEFORE_THE_FOLD + timedelta(hours=1)
    finally:
        attacker.close()
        store.close()
