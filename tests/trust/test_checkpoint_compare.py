"""The pure comparison of a store's chains with a checkpoint (stopline.core.checkpoint)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from stopline.core.checkpoint import (
    ITEM_MISSING,
    KIND,
    MALFORMED,
    REWRITE,
    ROLLBACK,
    VERSION,
    compare,
    heads,
)

HASH = st.text("0123456789abcdef", min_size=4, max_size=8)
HISTORY = st.lists(HASH, min_size=1, max_size=6).map(
    lambda hashes: {seq: h for seq, h in enumerate(hashes, start=1)}
)
HISTORIES = st.dictionaries(st.from_regex(r"itm_[a-z0-9]{3}", fullmatch=True), HISTORY, max_size=5)
CHAIN = st.lists(HASH, max_size=6)


def body(histories: Any, ledger: list[str], registry: list[str]) -> dict[str, Any]:
    return {"kind": KIND, "v": VERSION, "at": "2026-01-01T00:00:00.000000Z"} | heads(
        histories, ledger, registry
    )


def reasons(found: list[Any]) -> list[tuple[str, str, str]]:
    return [(f.kind, f.ref, f.reason) for f in found]


ITEMS = {"itm_a": {1: "a1", 2: "a2", 3: "a3"}, "itm_b": {1: "b1"}}
LEDGER = ["l1", "l2", "l3"]
REGISTRY = ["r1", "r2"]
TAKEN = body(ITEMS, LEDGER, REGISTRY)


def test_heads_name_the_last_event_of_each_chain() -> None:
    """A checkpoint holds each item's last (seq, hash) and each chain's length and last hash."""
    assert TAKEN["items"] == {"itm_a": {"seq": 3, "hash": "a3"}, "itm_b": {"seq": 1, "hash": "b1"}}
    assert TAKEN["ledger"] == {"n": 3, "hash": "l3"}
    assert TAKEN["registry"] == {"n": 2, "hash": "r2"}
    assert body({}, [], [])["ledger"] == {"n": 0, "hash": ""}


def test_a_store_that_only_grew_holds_its_checkpoint() -> None:
    """New events, new items and new ledger or registry entries are no finding."""
    grown = {"itm_a": {**ITEMS["itm_a"], 4: "a4"}, "itm_b": ITEMS["itm_b"], "itm_c": {1: "c1"}}
    assert compare(TAKEN, grown, [*LEDGER, "l4"], [*REGISTRY, "r3"]) == []


def test_a_deleted_item_is_named() -> None:
    """An item the checkpoint saw that is gone is checkpoint_item_missing."""
    found = compare(TAKEN, {"itm_a": ITEMS["itm_a"]}, LEDGER, REGISTRY)
    assert reasons(found) == [("item", "itm_b", ITEM_MISSING)]


def test_a_shorter_history_is_a_rollback() -> None:
    """A history that ends before the recorded event is checkpoint_rollback."""
    found = compare(TAKEN, {**ITEMS, "itm_a": {1: "a1", 2: "a2"}}, LEDGER, REGISTRY)
    assert reasons(found) == [("item", "itm_a", ROLLBACK)]
    assert "ends at event 2" in found[0].detail


def test_another_hash_at_the_recorded_event_is_a_rewrite() -> None:
    """The recorded event with another hash (a consistent rewrite) is checkpoint_rewrite, even
    when the rewritten history is longer."""
    found = compare(TAKEN, {**ITEMS, "itm_a": {1: "a1", 2: "x2", 3: "x3", 4: "x4"}}, LEDGER, [])
    assert reasons(found) == [("item", "itm_a", REWRITE), ("registry", "2", ROLLBACK)]


def test_the_ledger_and_registry_shorter_or_rewritten() -> None:
    """Each chain shorter than recorded, or with another hash at the recorded position."""
    assert reasons(compare(TAKEN, ITEMS, LEDGER[:2], REGISTRY)) == [("ledger", "3", ROLLBACK)]
    assert reasons(compare(TAKEN, ITEMS, ["l1", "l2", "zz", "l4"], REGISTRY)) == [
        ("ledger", "3", REWRITE)
    ]
    assert reasons(compare(TAKEN, ITEMS, LEDGER, ["r1", "zz"])) == [("registry", "2", REWRITE)]


def test_a_malformed_body_is_one_finding_per_problem() -> None:
    """A body that is not a checkpoint is refused with what is wrong, and nothing compared."""
    broken = {**TAKEN, "kind": "other", "ledger": {"n": -1, "hash": "x"}}
    found = compare(broken, {}, [], [])
    assert {f.reason for f in found} == {MALFORMED}
    assert len(found) == 2
    assert compare({**TAKEN, "items": {"itm_a": {"seq": True, "hash": "a"}}}, ITEMS, [], [])[
        0
    ].reason == (MALFORMED)


@given(HISTORIES, CHAIN, CHAIN, HISTORIES, CHAIN, CHAIN)
def test_growth_never_fails_and_a_checkpoint_holds_itself(
    histories: Any, ledger: list[str], registry: list[str], more: Any, l2: list[str], r2: list[str]
) -> None:
    """A store always holds its own checkpoint, and still does after any chain grows."""
    taken = body(histories, ledger, registry)
    assert compare(taken, histories, ledger, registry) == []
    grown = {k: dict(v) for k, v in histories.items()}
    for item_id, events in more.items():
        base = grown.setdefault(item_id, {})
        start = max(base, default=0)
        for offset, h in enumerate(events.values(), start=1):
            base[start + offset] = h
    assert compare(taken, grown, ledger + l2, registry + r2) == []


@given(HISTORIES.filter(bool), st.data())
def test_any_cut_or_changed_event_is_found(histories: Any, data: st.DataObject) -> None:
    """Cutting an item's history short, or changing the hash of its recorded event, is always
    named, on that item and on no other."""
    taken = body(histories, [], [])
    item_id = data.draw(st.sampled_from(sorted(histories)))
    events = dict(histories[item_id])
    last = max(events)
    if data.draw(st.booleans()):
        events.pop(last)
        expected = ROLLBACK
    else:
        events[last] = events[last] + "0"
        expected = REWRITE
    found = compare(taken, {**histories, item_id: events}, [], [])
    assert reasons(found) == [("item", item_id, expected)]


def test_an_item_without_events_has_no_head() -> None:
    """An item whose history reads empty is left out of a checkpoint (it has no head to keep)."""
    assert heads({"itm_a": {1: "a1"}, "itm_e": {}}, [], [])["items"] == {
        "itm_a": {"seq": 1, "hash": "a1"}
    }


def test_the_recorded_event_deleted_under_later_ones_is_a_rollback() -> None:
    """The event the checkpoint saw is gone while later events were written after it: named,
    never read as a history that only grew."""
    gapped = {**ITEMS, "itm_a": {1: "a1", 2: "a2", 4: "a4", 5: "a5"}}
    assert reasons(compare(TAKEN, gapped, LEDGER, REGISTRY)) == [("item", "itm_a", ROLLBACK)]


def test_a_chain_of_one_entry_rewritten_is_found() -> None:
    taken = body({}, ["l1"], ["r1"])
    assert reasons(compare(taken, {}, ["zz"], ["r1"])) == [("ledger", "1", REWRITE)]
    assert reasons(compare(taken, {}, ["l1"], ["zz", "r2"])) == [("registry", "1", REWRITE)]
    assert reasons(compare(taken, {}, [], ["r1"])) == [("ledger", "1", ROLLBACK)]


def test_each_malformed_part_of_a_body_is_refused() -> None:
    """Another version, an item head at event 0 or with a hash that is not text, a chain head
    whose hash is not text, items that are not an object: each is malformed, and nothing is
    compared (no store is read for it)."""
    broken: list[dict[str, Any]] = [
        {**TAKEN, "v": VERSION + 1},
        {**TAKEN, "items": {"itm_a": {"seq": 0, "hash": "a0"}}},
        {**TAKEN, "items": {"itm_a": {"seq": 1, "hash": 1}}},
        {**TAKEN, "registry": {"n": 2, "hash": None}},
        {**TAKEN, "items": []},
        {**TAKEN, "items": [["itm_a", {"seq": 1, "hash": "a1"}]]},
    ]
    for checkpoint in broken:
        found = compare(checkpoint, ITEMS, LEDGER, REGISTRY)
        assert [f.reason for f in found] == [MALFORMED], checkpoint
