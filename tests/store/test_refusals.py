"""The refusal audit is bounded: one row per (item, command, actor, reason codes), counted.

Run once against SQLite and once against PostgreSQL, through the real command layer.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest

from helpers import T0, decide_at, discover, dump, insert_old
from stopline.controller import Controller
from stopline.core.canonical import format_time
from stopline.core.commands import Discover
from stopline.core.policy import Policy
from stopline.store import Store, open_store, raw

S = timedelta(seconds=1)


class Ticking:
    """A clock one second further on each call."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += S
        return self.now


def rows(store: Store) -> list[dict[str, Any]]:
    with raw.reading(store) as cur:
        cur.execute("SELECT * FROM refusals ORDER BY id")
        found = [dict(r) for r in cur.fetchall()]
    for row in found:
        if isinstance(row["reasons"], str):
            row["reasons"] = json.loads(row["reasons"])
        for name in ("first_at", "last_at"):
            if not isinstance(row[name], str):
                row[name] = format_time(row[name])
    return found


@pytest.mark.parametrize(
    "loops", [300, pytest.param(3_000, marks=pytest.mark.slow)], ids=["300", "3000"]
)
def test_a_loop_of_refused_commands_leaves_a_bounded_audit(store: Store, loops: int) -> None:
    """N refused commands of three kinds (one of them naming a new made-up item each time)
    leave three rows whose counts add up to N, with the first and last time of each."""
    item = discover(store, "k1")
    store.register_automation("auto", Policy(), T0)
    clock = Ticking()
    controller = Controller(store, clock)
    before = dump(store)
    kinds: Counter[str] = Counter()
    times: dict[str, list[datetime]] = {}
    for n in range(loops):
        kind = ("approve", "edit", "guess")[n % 3]
        at = clock.now + S  # the time the controller will read
        if kind == "approve":
            decision = controller.approve(item.id, proposal="0" * 64, actor="mallory")
        elif kind == "edit":
            decision = controller.edit(item.id, actor="mallory", params={"n": n})
        else:  # a different made-up item every time
            decision = controller.approve(f"auto/guess-{n}", proposal="0" * 64, actor="mallory")
        assert not decision.applied and decision.reasons
        kinds[kind] += 1
        times.setdefault(kind, []).append(at)
    assert dump(store) == before, "a refusal wrote outside the audit"

    found = rows(store)
    assert len(found) == 3, found
    by_kind = {("guess" if r["item_id"] is None else r["command"]): r for r in found}
    assert sum(r["count"] for r in found) == loops
    for kind, row in by_kind.items():
        assert row["count"] == kinds[kind]
        assert row["actor"] == "mallory"
        assert row["first_at"] == format_time(times[kind][0])
        assert row["last_at"] == format_time(times[kind][-1])
    assert by_kind["guess"]["reasons"] == ["unknown_item"]
    assert by_kind["guess"]["command"] == "approve"
    assert by_kind["approve"]["item_id"] == by_kind["edit"]["item_id"] == item.id


def test_each_actor_command_and_reason_set_has_its_own_row(store: Store) -> None:
    """A different actor, command or set of reasons starts a row; a repeat only counts."""
    item = discover(store, "k1")
    store.register_automation("auto", Policy(), T0)
    controller = Controller(store, Ticking())
    for _ in range(3):
        for actor in ("mallory", "trudy"):
            controller.approve(item.id, proposal="0" * 64, actor=actor)
            controller.reject(item.id, actor=actor, reason="no")
    found = rows(store)
    assert sorted((r["actor"], r["command"], r["count"]) for r in found) == [
        ("mallory", "approve", 3),
        ("mallory", "reject", 3),
        ("trudy", "approve", 3),
        ("trudy", "reject", 3),
    ]


def test_the_migration_merges_the_rows_written_before_it(blank_store_url: str) -> None:
    """Rows of the one-row-per-refusal audit are merged with their counts and times; a later
    refusal of the same kind is still counted."""
    store = open_store(blank_store_url, migrate=False, check=False)
    try:
        raw.migrate_to(store, 4)
        discovered = decide_at(None, Discover("auto-k1", "auto", "k1", {}), T0)
        insert_old(store, discovered)  # as a store of schema 4 wrote it
        item = discovered.after
        assert item is not None
        store.register_automation("auto", Policy(), T0)
        old = [("mallory", ["not_allowed"], 0), ("mallory", ["not_allowed"], 2), (None, ["x"], 1)]
        mark = "%({})s" if store.dialect == "postgres" else ":{}"
        insert = "INSERT INTO refusals (at, item_id, command, actor, reasons) VALUES ({})".format(
            ", ".join(mark.format(n) for n in ("at", "item_id", "command", "actor", "reasons"))
        )
        with raw.writing(store) as cur:
            for actor, reasons, seconds in old:
                cur.execute(
                    insert,
                    {
                        "at": raw.time_value(store, T0 + seconds * S),
                        "item_id": item.id,
                        "command": "approve",
                        "actor": actor,
                        "reasons": raw.json_value(store, reasons),
                    },
                )
        assert store.migrate()[0] == 5  # and every migration after it
        store.check_schema()
        merged = rows(store)
        assert [
            (r["actor"], r["reasons"], r["count"], r["first_at"], r["last_at"]) for r in merged
        ] == [
            ("mallory", ["not_allowed"], 2, format_time(T0), format_time(T0 + 2 * S)),
            (None, ["x"], 1, format_time(T0 + S), format_time(T0 + S)),
        ]
        controller = Controller(store, Ticking())
        controller.approve(item.id, proposal="0" * 64, actor="mallory")
        controller.approve(item.id, proposal="0" * 64, actor="mallory")
        assert len(rows(store)) == 3
        assert sum(r["count"] for r in rows(store)) == 5
    finally:
        store.close()
