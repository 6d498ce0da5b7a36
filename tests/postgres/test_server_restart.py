"""The database goes away in the middle of a run; the workers reconnect and carry on.

The slow test restarts a PostgreSQL server of its own (:class:`PrivateServer`: restarting the
shared one would break every other test running against it). The fast one ends every session
of its database on the shared server with ``pg_terminate_backend``, which is what a restart
does to the clients.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from proc import wait_for

from .conftest import PgLab, PrivateServer
from .test_fleet import check_fleet, reexecuted

# one step at a time, in groups, and claimed ahead, and as greenlets of one thread
LAB_MODES = ("single", "batch", "ahead", "lockstep")

pytestmark = pytest.mark.postgres

RESTARTS = (0.2, 0.4, 0.6)  # disrupt when this share of the items is completed
LEASE = 10


def run_through(lab: PgLab, workers: int, items: int, disrupt: Callable[[], None]) -> None:
    """Run ``workers`` processes over ``items`` items, ``disrupt`` the database at each share
    of :data:`RESTARTS`; every worker must carry on and every item complete, each step once.

    Whatever the timing: the last key's ``observe`` waits for a gate, so the run cannot end
    before the last disruption; after it, every process parks in its next ``observe`` and the
    gate opens once all have, so each one surely commits work after the last disruption."""
    gate, when, parked = lab.root / "gate", lab.root / "disrupted", lab.root / "parked"
    parked.mkdir()
    env = {
        "STOPLINE_PG_ITEMS": items,
        "STOPLINE_PG_LEASE": LEASE,
        "STOPLINE_PG_SLEEP": 0.01,
        "STOPLINE_PG_BLOCK_KEY": f"item-{items - 1:04d}",
        "STOPLINE_PG_GATE": gate,
        "STOPLINE_PG_PARK_DIR": parked,
        "STOPLINE_PG_PARK_WHEN": when,
    }
    linger = str(LEASE + 5)  # --once waits out a lease a lost claim may have left behind
    procs = [lab.run_fleet("--linger", linger, env=env, name=f"worker{n}") for n in range(workers)]

    def progress(done: float) -> bool:
        for proc in procs:
            code = proc.popen.poll()
            assert code in (None, 0), f"a worker exited {code} mid-run\n{proc.output()}"
        return lab.completed() >= done

    for share in RESTARTS:
        wait_for(lambda share=share: progress(items * share), 300, f"{share:.0%} of items done")
        assert lab.completed() < items, "the run ended before the disruption"
        disrupt()
    back = datetime.now(UTC)
    when.touch()
    pids = {p.pid for p in procs}
    # With several items in flight, one worker's spare slots may take every item left while
    # another is still reconnecting: in batch mode the lab holds what must hold whatever the
    # timing (every process lives on and ends well, every item completes, no step runs twice),
    # and that work goes on after the last disruption, not that every process took part in it.
    every = lab.env.get("STOPLINE_CONCURRENCY", "1") == "1"

    def parked_now() -> set[int]:
        return {int(p.name) for p in parked.iterdir() if p.name.isdigit()}

    wait_for(
        lambda: progress(0) and (parked_now() == pids if every else bool(parked_now())),
        300,
        "every worker to park in a step after the last disruption"
        if every
        else "a worker to park in a step after the last disruption",
    )
    gate.touch()
    for proc in procs:
        code = proc.wait(600)
        assert code == 0, proc.output()
    after = lab.query(
        "SELECT DISTINCT split_part(actor, ':', 2)::int AS pid FROM events"
        " WHERE command <> 'discover' AND at > %s",
        (back,),
    )
    worked = {r["pid"] for r in after}
    if every:
        assert worked == pids, "a worker did no work after the last disruption"
    else:
        assert worked and worked <= pids, "no work after the last disruption"
    check_fleet(lab, items)
    assert reexecuted(lab) == [], "a step ran twice across a disruption"


def test_workers_reconnect_after_their_sessions_are_killed(pg_lab: PgLab) -> None:
    """Every session of the database killed three times mid-run: workers carry on, each step once."""
    database = pg_lab.url.rsplit("/", 1)[1]

    def kill_sessions() -> None:
        killed = pg_lab.query(
            "SELECT pg_terminate_backend(pid, 5000) AS ok FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        )
        assert any(r["ok"] for r in killed), "no session to kill"  # one may end by itself

    run_through(pg_lab, workers=3, items=200, disrupt=kill_sessions)


@pytest.mark.slow
def test_workers_reconnect_after_a_server_restart(
    private_server: PrivateServer, tmp_path: Path
) -> None:
    """pg_ctl restart three times mid-run: workers reconnect; nothing lost, nothing run twice."""
    lab = PgLab(tmp_path, private_server.create_database("fleet"))
    try:
        lab.cli("migrate")
        lab.create_effects_tables()
        run_through(lab, workers=4, items=600, disrupt=private_server.restart)
        log = private_server.log.read_text()
        ready = log.count("database system is ready to accept connections")
        assert ready == 1 + len(RESTARTS), log[-3000:]
    finally:
        lab.cleanup()
