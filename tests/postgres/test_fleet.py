"""Many worker processes on one PostgreSQL database: every item done, every effect once."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

from proc import wait_for

from .conftest import PgLab

# one step at a time, in groups, and claimed ahead, and as greenlets of one thread
LAB_MODES = ("single", "batch", "ahead", "lockstep")

pytestmark = pytest.mark.postgres

STEPS = 3  # observe, propose, execute: the hooks that record an effect
EVENTS_PER_ITEM = 6  # discover, observe, propose, execute, delivered, read back


def check_fleet(lab: PgLab, items: int) -> dict[str, Any]:
    """Every item completed, unleased, with one history of the same length; every effect
    recorded exactly once and executed at least once; ``stopline verify`` clean."""
    assert lab.states() == {"completed": items}, "an item was lost or stuck"
    assert lab.scalar("SELECT COUNT(*) FROM items WHERE lease_owner IS NOT NULL") == 0
    lengths = lab.query("SELECT seq, COUNT(*) AS n FROM items GROUP BY seq")
    assert lengths == [{"seq": EVENTS_PER_ITEM, "n": items}], lengths
    effects = lab.query(
        "SELECT COUNT(*) AS n, COUNT(DISTINCT item_key) AS keys FROM effects"
        " WHERE step IN ('observe', 'propose', 'execute')"
    )[0]
    assert effects == {"n": items * STEPS, "keys": items}, "an effect is missing"
    unexecuted = lab.query(
        "SELECT e.item_key, e.step FROM effects e LEFT JOIN executions x"
        " ON x.item_key = e.item_key AND x.step = e.step WHERE x.id IS NULL"
    )
    assert unexecuted == [], "an effect without an execution"
    doc = lab.verify()
    assert (doc["items"], doc["events"]) == (items, items * EVENTS_PER_ITEM)
    return doc


def reexecuted(lab: PgLab) -> list[dict[str, Any]]:
    """``(item_key, step)`` pairs whose hook ran more than once, with the attempt logs."""
    return lab.query(
        "SELECT x.item_key, x.step, COUNT(*) AS runs, i.attempt_log::text AS log"
        " FROM executions x JOIN items i ON i.key = x.item_key"
        " GROUP BY x.item_key, x.step, i.attempt_log::text HAVING COUNT(*) > 1"
    )


def worker_pids(lab: PgLab) -> set[int]:
    """Pids of the workers that committed a step (worker ids are ``host:pid:suffix``)."""
    rows = lab.query("SELECT DISTINCT actor FROM events WHERE command <> 'discover'")
    return {int(r["actor"].split(":")[1]) for r in rows}


CASES = [
    pytest.param(3, 100, 0, id="3x100"),
    pytest.param(3, 100, 1, id="3x100-kill1"),
    pytest.param(8, 1000, 0, id="8x1000", marks=pytest.mark.slow),
    pytest.param(8, 1000, 2, id="8x1000-kill2", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("workers", "items", "kills"), CASES)
def test_workers_complete_every_item_with_each_effect_once(
    pg_lab: PgLab, workers: int, items: int, kills: int
) -> None:
    """N worker processes, K of them SIGKILLed mid-run, complete every item; effects once.

    Every process parks inside an ``observe`` (the fleet app's ``PARK_AFTER``) holding that
    step's lease, and the gate opens once all have: so each process surely takes part, however
    slowly it starts. With kills they park after committing a quarter of the items between
    them, and K children are killed while parked: each victim has committed work and abandons
    exactly the step it holds, whatever the timing."""
    env: dict[str, Any] = {
        "STOPLINE_PG_ITEMS": items,
        "STOPLINE_PG_LEASE": 2 if kills else 60,
        "STOPLINE_PG_SLEEP": 0.02 if items <= 100 else 0.005,
    }
    parked = pg_lab.root / "parked"
    gate = pg_lab.root / "gate"
    parked.mkdir()
    env.update(
        STOPLINE_PG_PARK_AFTER=items // (4 * workers) if kills else 0,
        STOPLINE_PG_PARK_DIR=parked,
        STOPLINE_PG_GATE=gate,
    )
    started = time.monotonic()
    proc = pg_lab.run_fleet("--workers", str(workers), env=env, name="fleet")

    def all_parked() -> dict[int, str]:
        assert proc.popen.poll() is None, proc.output()
        found = {int(p.name): p.read_text() for p in parked.iterdir() if p.name.isdigit()}
        return found if len(found) == workers else {}

    # The park files are the event: a process writes its own once it has started and holds a
    # step. (Polling /proc for the children meanwhile kept a quarter of a core busy.)
    holding = wait_for(all_parked, 300, f"all {workers} processes to park inside a step")
    children = proc.children()  # parked, so alive until the gate opens
    assert len(children) == workers - 1, children
    assert set(holding) == {proc.pid, *children}
    victims = sorted(children)[:kills]
    if kills:
        for pid in victims:
            (owner,) = pg_lab.query("SELECT lease_owner FROM items WHERE key = %s", (holding[pid],))
            assert f":{pid}:" in owner["lease_owner"], "a parked worker lost its lease"
            os.kill(pid, signal.SIGKILL)
        assert pg_lab.completed() < items, "the run ended before the kill"
    gate.touch()
    code = proc.wait(900)
    elapsed = time.monotonic() - started
    assert code == 0, proc.output()
    assert proc.json()["discovered"] == items

    check_fleet(pg_lab, items)
    twice = reexecuted(pg_lab)
    committed = worker_pids(pg_lab)
    if not kills:
        assert twice == [], "a step ran twice in a run without faults"
        assert pg_lab.refusals() == []
        assert committed == {proc.pid, *children}, "a worker process never committed a step"
    else:
        unexplained = [t for t in twice if "lease_expired" not in t["log"]]
        assert unexplained == [], "a step ran twice although no lease expired"
        abandoned = pg_lab.query(
            "SELECT key FROM items, json_array_elements(attempt_log) AS a"
            " WHERE a->>'class' = 'lease_expired'"
            " AND split_part(a->>'worker', ':', 2)::int = ANY(%s)",
            (victims,),
        )
        assert abandoned, "no step of a killed worker was taken over after its lease expired"
        assert set(victims) <= committed
    print(
        f"\n{workers} workers x {items} items, {kills} killed: {elapsed:.1f} s,"
        f" {items / elapsed:.0f} items/s, {len(twice)} steps re-run"
    )
