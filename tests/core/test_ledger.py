"""The ledger's checks (``core/ledger.py``), held on their own against histories the real
commands wrote: which events it records, and each way a history, a ledger or the registry can
be cut back, rewritten or stripped, found by ``ledger_findings`` (``stopline verify``) and,
for one item, by ``item_ledger_findings`` (the check before acting).

The integrity labs do the same to a real database; these say which rule finds what."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import timedelta, timezone
from functools import cache
from itertools import count

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stopline.core.ledger import (
    AUTHORITY,
    CREATE,
    EVENT_REWRITTEN,
    EVENT_UNRECORDED,
    HISTORY_CUT,
    ITEM_MISSING,
    ITEM_UNRECORDED,
    LEDGER_BROKEN,
    MILESTONE,
    REGISTRY,
    REGISTRY_KIND,
    LedgerEntry,
    entry,
    item_ledger_findings,
    ledger_findings,
    ledger_kind,
    shard_of,
)
from stopline.core.records import Event
from stopline.core.states import State

from .helpers import T0, Harness, reasons_of, resealed

S = State
Histories = dict[str, list[Event]]
REGISTRY_HASHES = ["r1" * 32, "r2" * 32, "r3" * 32]


def histories() -> Histories:
    """Three items the real commands wrote: one completed (created, approved, executed,
    staged, delivered, read back), one approved, one still observing. A fresh copy each time
    (the tests edit it); the events themselves are frozen."""
    return {item_id: list(events) for item_id, events in _walked().items()}


@cache
def _walked() -> dict[str, tuple[Event, ...]]:
    walks = {"auto-done": S.COMPLETED, "auto-approved": S.APPROVED, "auto-new": S.OBSERVING}
    found: dict[str, tuple[Event, ...]] = {}
    for item_id, state in walks.items():
        h = Harness(item_id=item_id)
        h.to(state)
        found[item_id] = tuple(h.events)
    return found


def recorded(events: Histories, registry: Sequence[str] = REGISTRY_HASHES) -> list[LedgerEntry]:
    """The ledger a store appends for ``events`` and the registry events ``registry``."""
    last: dict[int, LedgerEntry] = {}
    entries: list[LedgerEntry] = []

    def append(kind: str, item_id: str, seq: int, event_hash: str) -> None:
        shard = shard_of(item_id)
        before = last.get(shard)
        n, prev = (1, "") if before is None else (before.n + 1, before.hash)
        made = entry(shard, n, T0, kind, item_id, seq, event_hash, prev)
        entries.append(made)
        last[shard] = made

    for item_id, history in events.items():
        for event in history:
            kind = ledger_kind(event)
            if kind is not None:
                append(kind, item_id, event.seq, event.hash)
    for n, event_hash in enumerate(registry, start=1):
        append(REGISTRY_KIND, REGISTRY, n, event_hash)
    return entries


def of_item(entries: Sequence[LedgerEntry], item_id: str) -> list[tuple[LedgerEntry, str | None]]:
    """An item's entries as the store reads them before acting: each with the stored hash of
    the entry before it in its shard."""
    by_place = {(e.shard, e.n): e for e in entries}
    return [
        (e, None if (before := by_place.get((e.shard, e.n - 1))) is None else before.hash)
        for e in entries
        if e.item_id == item_id
    ]


def verify(
    events: Mapping[str, Sequence[Event]],
    entries: Sequence[LedgerEntry],
    registry: Sequence[str] = REGISTRY_HASHES,
) -> set[str]:
    return reasons_of(ledger_findings(entries, events, registry))


def before_acting(events: Histories, entries: Sequence[LedgerEntry], item_id: str) -> set[str]:
    return reasons_of(item_ledger_findings(item_id, events[item_id], of_item(entries, item_id)))


# --- what is recorded ----------------------------------------------------------------------------


def test_creation_people_and_milestones_are_recorded_and_nothing_else() -> None:
    events = histories()["auto-done"]
    kinds = {e.command: ledger_kind(e) for e in events}
    assert kinds["discover"] == CREATE
    assert kinds["approve"] == AUTHORITY
    for milestone in ("execute", "stage", "delivered", "readback"):
        assert kinds[milestone] == MILESTONE, milestone
    assert kinds["observe"] is None and kinds["propose"] is None


def test_an_untouched_store_has_no_findings() -> None:
    events = histories()
    entries = recorded(events)
    assert verify(events, entries) == set()
    for item_id in events:
        assert before_acting(events, entries, item_id) == set()


# --- the ledger itself ---------------------------------------------------------------------------


def done_entries(entries: Sequence[LedgerEntry]) -> list[int]:
    """Positions in ``entries`` of the completed item's entries."""
    return [i for i, e in enumerate(entries) if e.item_id == "auto-done"]


def test_an_altered_entry_breaks_its_chain() -> None:
    events = histories()
    entries = recorded(events)
    i = done_entries(entries)[1]
    entries[i] = replace(entries[i], at=T0.replace(year=2030))  # its hash no longer fits
    assert LEDGER_BROKEN in verify(events, entries)
    assert LEDGER_BROKEN in before_acting(events, entries, "auto-done")


def test_an_entry_deleted_from_the_middle_breaks_the_link_after_it() -> None:
    """The entry of the completed item's approval deleted: the entry after it no longer
    follows the one before it, and the approval is no longer recorded."""
    events = histories()
    entries = recorded(events)
    del entries[done_entries(entries)[1]]
    assert verify(events, entries) == {LEDGER_BROKEN, EVENT_UNRECORDED}
    assert before_acting(events, entries, "auto-done") == {LEDGER_BROKEN, EVENT_UNRECORDED}


def test_a_shard_cut_back_to_before_an_item_is_seen_before_acting_on_it() -> None:
    """Every entry up to and including the item's creation deleted: its next entry is not a
    shard's first (n > 1) yet has no entry before it."""
    events = histories()
    entries = recorded(events)
    created = done_entries(entries)[0]
    shard = entries[created].shard
    entries = [e for e in entries if e.shard != shard or e.n > entries[created].n]
    assert LEDGER_BROKEN in before_acting(events, entries, "auto-done")


def test_an_entry_sealed_again_with_another_link_breaks_its_chain() -> None:
    """A middle entry pointed at another predecessor and sealed again: it no longer follows
    the entry before it, and the entry after it no longer follows it."""
    events = histories()
    entries = recorded(events)
    i = done_entries(entries)[1]
    entries[i] = resealed(entries[i], prev_hash="f" * 64)
    assert verify(events, entries) == {LEDGER_BROKEN}
    assert before_acting(events, entries, "auto-done") == {LEDGER_BROKEN}


def test_a_last_entry_renumbered_and_sealed_again_is_out_of_place() -> None:
    events = histories()
    entries = recorded(events)
    i = max(i for i, e in enumerate(entries) if e.shard == entries[-1].shard)
    entries[i] = resealed(entries[i], n=entries[i].n + 7)
    assert verify(events, entries) == {LEDGER_BROKEN}


def test_an_entry_before_the_items_sealed_again_breaks_its_link() -> None:
    """The item's own entries are intact, but the one before its second entry was changed
    and sealed again: the stored link no longer names it."""
    events = histories()
    entries = recorded(events)
    first = done_entries(entries)[0]
    entries[first] = resealed(entries[first], at=T0.replace(year=2030))
    assert before_acting(events, entries, "auto-done") == {LEDGER_BROKEN}


def test_a_shard_cut_back_to_just_before_an_item_and_sealed_again_is_seen() -> None:
    """Every entry before a new item's creation deleted, and its creation's entry (its only
    one) sealed again as if it began the shard (no link) but keeping its number: before
    acting, an entry that is not its shard's first and has nothing before it."""
    shard = shard_of("auto-new")
    neighbour = next(f"auto-n{i}" for i in count() if shard_of(f"auto-n{i}") == shard)
    first = Harness(item_id=neighbour)
    first.discover()
    events = {neighbour: list(first.events), **histories()}  # created first, same shard
    entries = recorded(events)
    (created,) = [e for e in entries if e.item_id == "auto-new"]
    assert created.n > 1
    entries = [e for e in entries if e.shard != shard or e.n >= created.n]
    entries = [resealed(e, prev_hash="") if e is created else e for e in entries]
    assert before_acting(events, entries, "auto-new") == {LEDGER_BROKEN}


def relinked_without(entries: Sequence[LedgerEntry], item_id: str, seq: int) -> list[LedgerEntry]:
    """``entries`` without the entry of ``item_id``'s event ``seq``, its shard renumbered,
    re-linked and sealed again: a whole chain, as a writer who can hash would leave it."""
    gone = next(e for e in entries if (e.item_id, e.seq) == (item_id, seq))
    kept: list[LedgerEntry] = []
    for e in entries:
        if e.shard != gone.shard:
            kept.append(e)
        elif e is not gone:
            before = [k for k in kept if k.shard == gone.shard]
            prev = before[-1].hash if before else ""
            kept.append(resealed(e, n=len(before) + 1, prev_hash=prev))
    return kept


@pytest.mark.parametrize(
    ("item_id", "command"),
    [("auto-approved", "approve"), ("auto-done", "execute"), ("auto-done", "readback")],
)
def test_a_chain_rewritten_without_an_entry_still_misses_its_event(
    item_id: str, command: str
) -> None:
    """The chain is whole again, but the event the entry recorded is still in the history."""
    events = histories()
    seq = next(e.seq for e in events[item_id] if e.command == command)
    entries = relinked_without(recorded(events), item_id, seq)
    assert verify(events, entries) == {EVENT_UNRECORDED}
    assert before_acting(events, entries, item_id) == {EVENT_UNRECORDED}


# --- the histories -------------------------------------------------------------------------------


def test_an_item_deleted_from_the_store_is_missing() -> None:
    events = histories()
    entries = recorded(events)
    del events["auto-approved"]
    assert verify(events, entries) == {ITEM_MISSING}


def test_an_item_the_ledger_never_saw_is_unrecorded() -> None:
    events = histories()
    entries = recorded({k: v for k, v in events.items() if k != "auto-new"})
    unseen = {ITEM_UNRECORDED, EVENT_UNRECORDED}  # its creation, as an item and as an event
    assert verify(events, entries) == unseen
    assert before_acting(events, entries, "auto-new") == unseen


@pytest.mark.parametrize("cut", [1, 2, 4])
def test_a_history_cut_back_to_before_an_action_is_seen(cut: int) -> None:
    """The last events deleted (a restored backup, a deleted tail): the ledger still holds
    the milestones and approvals they were."""
    events = histories()
    entries = recorded(events)
    events["auto-done"] = events["auto-done"][:-cut]
    assert HISTORY_CUT in verify(events, entries)
    assert HISTORY_CUT in before_acting(events, entries, "auto-done")


def test_a_recorded_event_rewritten_and_rehashed_is_seen() -> None:
    events = histories()
    entries = recorded(events)
    history = events["auto-approved"]
    i = next(i for i, e in enumerate(history) if e.command == "approve")
    history[i] = resealed(history[i], actor="mallory")
    assert EVENT_REWRITTEN in verify(events, entries)
    assert EVENT_REWRITTEN in before_acting(events, entries, "auto-approved")


# --- the registry --------------------------------------------------------------------------------


def test_the_registry_chain_is_held_against_the_ledger() -> None:
    events = histories()
    entries = recorded(events)
    assert verify(events, entries, [*REGISTRY_HASHES, "r4" * 32]) == {EVENT_UNRECORDED}
    assert verify(events, entries, ["rx" * 32, *REGISTRY_HASHES[1:]]) == {EVENT_REWRITTEN}
    assert verify(events, entries, REGISTRY_HASHES[:-1]) == {HISTORY_CUT}


# --- any single edit ----------------------------------------------------------------------------


@settings(deadline=None)  # each example checks whole histories: no bound on its time
@given(
    edit=st.sampled_from(["alter", "delete", "cut", "rewrite"]),
    pick=st.integers(min_value=0, max_value=10**6),
)
def test_any_one_edit_of_an_acted_on_item_is_found_both_ways(edit: str, pick: int) -> None:
    """One edit of the completed item's ledger entries or history, anywhere: ``verify`` and the
    check before acting both find something."""
    events = histories()
    entries = recorded(events)
    mine = done_entries(entries)
    history = events["auto-done"]
    if edit == "alter":
        i = mine[pick % len(mine)]
        entries[i] = replace(entries[i], event_hash="0" * 64)
    elif edit == "delete":
        del entries[mine[pick % len(mine)]]
    elif edit == "cut":
        events["auto-done"] = history[: pick % len(history)]
    else:
        recorded_seqs = [e.seq for e in entries if e.item_id == "auto-done"]
        seq = recorded_seqs[pick % len(recorded_seqs)]
        i = next(i for i, e in enumerate(history) if e.seq == seq)
        history[i] = resealed(history[i], actor="mallory")
    assert verify(events, entries)
    assert before_acting(events, entries, "auto-done")


@pytest.mark.parametrize(
    "change",
    [
        {"seq": 5},
        {"kind": "authority"},
        {"at": T0.replace(microsecond=1)},
        {"hash": "0" * 64},
        {"prev_hash": "1" * 64},
    ],
    ids=lambda c: next(iter(c)),
)
def test_an_entry_known_sound_vouches_for_no_other(change: dict[str, object]) -> None:
    """An entry made or found sound is kept as sound by its fields; one field changed (and
    not sealed again) is checked afresh and fails."""
    made = entry(2, 7, T0, "milestone", "itm_a", 4, "e" * 64, "p" * 64)
    assert made.hash_ok() and replace(made).hash_ok()
    assert not replace(made, **change).hash_ok()


@pytest.mark.parametrize("field", ["shard", "n", "seq"])
def test_an_equal_entry_of_other_types_is_checked_afresh(field: str) -> None:
    """``True`` equals ``1`` and a time in another zone equals its UTC time, but their
    canonical text differs (or may): such an entry is never vouched for by the memo."""
    made = entry(1, 1, T0, "milestone", "itm_a", 1, "e" * 64, "p" * 64)
    assert made.hash_ok()
    assert replace(made, **{field: True}) == made
    assert not replace(made, **{field: True}).hash_ok()
    zoned = replace(made, at=T0.astimezone(timezone(timedelta(hours=2))))
    assert zoned == made and zoned.hash_ok()  # the same instant writes the same UTC text


@pytest.mark.parametrize(
    "change", [{"n": 2**60}, {"seq": -(2**60)}, {"item_id": "\ud800"}], ids=["n", "seq", "text"]
)
def test_an_entry_no_canonical_text_holds_is_unsound_not_an_error(
    change: dict[str, object],
) -> None:
    """A row written by SQL with an integer past 2**53 or a lone surrogate: its hash cannot be
    computed, so it is not the hash stored: a finding, never an exception out of the check."""
    made = entry(3, 2, T0, "milestone", "itm_a", 2, "e" * 64, "p" * 64)
    assert not replace(made, **change).hash_ok()
