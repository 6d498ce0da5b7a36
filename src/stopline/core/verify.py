"""Replay an item's event log: hash chain, sequence, and legal transitions only."""

from __future__ import annotations

from collections.abc import Sequence

from .records import Event, Item
from .transitions import Cmd, lookup


def verify_item(item: Item, events: Sequence[Event]) -> list[str]:
    """Every problem found in ``item``'s history; an empty list means it is sound."""
    problems: list[str] = []
    prev_hash = ""
    prev_state = None
    for n, event in enumerate(events, start=1):
        where = f"item {item.id} event {event.seq}"
        if event.seq != n:
            problems.append(f"{where}: sequence gap (expected {n})")
        if event.item_id != item.id:
            problems.append(f"{where}: belongs to {event.item_id}")
        if event.prev_hash != prev_hash:
            problems.append(f"{where}: chain broken (prev_hash does not match event {n - 1})")
        if event.computed_hash() != event.hash:
            problems.append(f"{where}: hash mismatch (the event was altered)")
        if event.from_state != prev_state:
            problems.append(
                f"{where}: starts in {event.from_state}, previous event ended in {prev_state}"
            )
        try:
            row = lookup(event.from_state, Cmd(event.command))
        except ValueError:
            row = None
        if row is None or event.to_state not in row.targets:
            problems.append(
                f"{where}: illegal transition {event.from_state} --{event.command}--> {event.to_state}"
            )
        prev_hash, prev_state = event.hash, event.to_state
    if not events:
        problems.append(f"item {item.id}: no events")
    elif item.state != prev_state:
        problems.append(
            f"item {item.id}: state {item.state} does not follow from its events ({prev_state})"
        )
    if item.seq != len(events):
        problems.append(f"item {item.id}: history_length {item.seq} but {len(events)} events")
    if events and item.head != prev_hash:
        problems.append(f"item {item.id}: head does not match the last event")
    return problems
