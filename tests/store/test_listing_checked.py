"""``listing.checked`` on SQLite and PostgreSQL: the rows of a listing come back in the order
they were listed, each as read again with its head (not as the listing read it), sound rows
with no finding, and an id the store does not hold left out rather than failing the page."""

from __future__ import annotations

from dataclasses import replace

from helpers import T0, decide_at, discover
from stopline.core.commands import NeedsEyes
from stopline.listing import checked
from stopline.store import Store


def test_rows_keep_the_listing_order_and_are_read_again(store: Store) -> None:
    b_listed = discover(store, "b")
    claimed = store.claim("w1", T0, 30.0)  # written after the listing read it
    assert claimed is not None and claimed.id == b_listed.id
    decision = decide_at(claimed, NeedsEyes("w1", claimed.lease_token, "ops", "unclear"), T0)
    assert decision.after is not None and store.apply(decision)
    b_now = decision.after
    a = discover(store, "a")
    rows = checked(store, [b_listed, a])
    assert [item.id for item, _ in rows] == [b_listed.id, a.id]
    assert [findings for _, findings in rows] == [[], []]
    # the row listed before a write is shown as it is now
    assert rows[0][0] == b_now == store.get(b_now.id) and rows[0][0].state.value == "exception"
    assert rows[1][0] == store.get(a.id)


def test_an_item_the_store_does_not_hold_is_left_out(store: Store) -> None:
    a = discover(store, "a")
    gone = replace(a, id="auto-gone", key="gone")
    rows = checked(store, [gone, a, gone])
    assert [item.id for item, _ in rows] == [a.id]
    assert checked(store, []) == []
