"""Database faults at every stage of ``stopline run``: the processes live, nothing is lost or
doubled.

Faults are injected from inside the database, so they land at an exact statement whatever
the timing: a trigger (:func:`install_fault`) ends the session of the statement that fires it
(``pg_terminate_backend(pg_backend_pid())``, before that statement can commit), on the N-th
firing as counted by a sequence (a rollback does not undo ``nextval``). The server tests hold
a run inside a statement with an advisory lock the test owns (``block``), restart the server
while it waits there, and so cut off that very statement.

Every case runs a fleet with ``--workers`` children and then checks the fleet's account: every
item completed, each effect recorded once, no hook run twice, ``stopline verify`` clean, and
the number of items discovery reports equal to the number of keys.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import psycopg
import pytest

from proc import Proc, wait_for

from .conftest import PgLab, PrivateServer, query
from .test_fleet import check_fleet, reexecuted

# one step at a time, in groups, and claimed ahead, and as greenlets of one thread
LAB_MODES = ("single", "batch", "ahead", "lockstep")

pytestmark = pytest.mark.postgres

LOCK_KEY = 7_201_912  # the advisory lock a ``block`` fault waits for


def install_fault(
    url: str,
    name: str,
    *,
    on: str,
    when: str = "true",
    first: int = 1,
    times: int = 1,
    action: str = "terminate",
) -> None:
    """A trigger ``ON`` (e.g. ``BEFORE INSERT ON items``) that, on its ``first`` .. ``first +
    times - 1``-th firing, ends its own session (``terminate``) or waits for the advisory lock
    :data:`LOCK_KEY` (``block``)."""
    do = {
        # pg_sleep notices the pending termination at once: nothing after it runs.
        "terminate": "PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(60);",
        "block": f"PERFORM pg_advisory_xact_lock({LOCK_KEY});",
    }[action]
    query(
        url,
        f"""
        CREATE SEQUENCE fault_{name};
        CREATE FUNCTION fault_{name}() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE n bigint := nextval('fault_{name}');
        BEGIN
            IF n >= {first} AND n < {first + times} THEN {do} END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER fault_{name} {on} FOR EACH ROW WHEN ({when})
        EXECUTE FUNCTION fault_{name}();
        """,
    )


def firings(url: str, name: str) -> int:
    """How often the fault's trigger fired (including the firings that did nothing)."""
    (row,) = query(url, f"SELECT last_value, is_called FROM fault_{name}")
    return int(row["last_value"]) if row["is_called"] else 0


def finish(lab: PgLab, proc: Proc, items: int) -> None:
    """The run exits 0 having discovered each key once; the fleet's account is exact."""
    code = proc.wait(300)
    assert code == 0, proc.output()
    assert proc.json()["discovered"] == items, proc.output()
    check_fleet(lab, items)
    assert reexecuted(lab) == [], "a hook ran twice"
    assert lab.refusals() == [], "a worker's commit was refused"


FAULTS = [
    pytest.param(
        "BEFORE INSERT OR UPDATE ON automations", "true", 1, 2, id="registering-the-automation"
    ),
    pytest.param("BEFORE INSERT ON actor_events", "true", 1, 2, id="seeding-an-actor"),
    pytest.param("BEFORE INSERT ON items", "true", 5, 3, id="first-discovery"),
    pytest.param(
        "BEFORE UPDATE ON items",
        "NEW.seq = OLD.seq AND NEW.lease_token > OLD.lease_token",
        5,
        3,
        id="mid-claim",
    ),
    pytest.param("BEFORE INSERT ON events", "NEW.command <> 'discover'", 10, 3, id="mid-apply"),
]


@pytest.mark.parametrize(("on", "when", "first", "times"), FAULTS)
def test_a_session_ended_at_each_stage_is_ridden_out(
    pg_lab: PgLab, on: str, when: str, first: int, times: int
) -> None:
    """Sessions ended inside one statement of a stage: the run carries on, each effect once."""
    items = 40
    install_fault(pg_lab.url, "cut", on=on, when=when, first=first, times=times)
    proc = pg_lab.run_fleet(
        "--workers",
        "2",
        env={"STOPLINE_PG_ITEMS": items, "STOPLINE_PG_LEASE": 60, "STOPLINE_PG_ACTORS": "ana,bo"},
        name="fleet",
    )
    finish(pg_lab, proc, items)
    assert firings(pg_lab.url, "cut") >= first + times - 1, "the fault never fired"
    seeded = pg_lab.query(
        "SELECT actor, COUNT(*) AS n FROM actor_events WHERE change <> 'policy' GROUP BY actor"
    )
    assert sorted((r["actor"], r["n"]) for r in seeded) == [("ana", 1), ("bo", 1)]
    assert pg_lab.scalar("SELECT COUNT(*) FROM automations") == 1


# --- a server of its own ---------------------------------------------------------------------


def fleet_lab(server: PrivateServer, root: Path) -> PgLab:
    lab = PgLab(root, server.create_database("fleet"))
    lab.cli("migrate")
    lab.create_effects_tables()
    return lab


def alive(proc: Proc) -> Any:
    """``True`` while ``proc`` runs; a failure with its output once it has exited."""
    code = proc.popen.poll()
    assert code is None, f"{proc.name} exited {code}\n{proc.output()}"
    return True


def test_a_restart_during_startup_discovery_and_under_a_running_fleet(
    private_server: PrivateServer, tmp_path: Path
) -> None:
    """pg_ctl restart while discovery waits inside an insert, then twice mid-run: exact account."""
    lab = fleet_lab(private_server, tmp_path)
    items = 80
    try:
        install_fault(lab.url, "hold", on="BEFORE INSERT ON items", first=7, action="block")
        holder = psycopg.connect(lab.url, autocommit=True)
        holder.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        gate = tmp_path / "gate"
        env = {
            "STOPLINE_PG_ITEMS": items,
            "STOPLINE_PG_LEASE": 30,
            "STOPLINE_PG_SLEEP": 0.02,
            # the last key waits for the gate: the run cannot end before the last restart
            "STOPLINE_PG_BLOCK_KEY": f"item-{items - 1:04d}",
            "STOPLINE_PG_GATE": gate,
        }
        proc = lab.run_fleet("--workers", "3", "--linger", "35", env=env, name="fleet")
        wait_for(
            lambda: (
                alive(proc)
                and lab.query(
                    "SELECT 1 FROM pg_stat_activity"
                    " WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'"
                )
            ),
            120,
            "discovery to wait inside its seventh insert",
        )
        assert lab.scalar("SELECT COUNT(*) FROM items") == 6
        private_server.restart()
        with contextlib.suppress(psycopg.Error):
            holder.close()
        for share in (0.3, 0.6):
            wait_for(
                lambda share=share: alive(proc) and lab.completed() >= items * share,
                300,
                f"{share:.0%} of the items to complete",
            )
            assert lab.completed() < items, "the run ended before the restart"
            private_server.restart()
        gate.touch()
        finish(lab, proc, items)
        assert firings(lab.url, "hold") > 7
    finally:
        lab.cleanup()


@pytest.mark.slow
def test_run_waits_for_a_database_that_is_down_at_startup(
    private_server: PrivateServer, tmp_path: Path
) -> None:
    """The server is down when `stopline run` starts and stays down past a pool timeout: the run
    logs its retries, waits, and does all the work once the server is back."""
    lab = fleet_lab(private_server, tmp_path)
    items = 20
    try:
        private_server.stop()
        proc = lab.run_fleet("--workers", "2", env={"STOPLINE_PG_ITEMS": items}, name="fleet")
        wait_for(
            lambda: (
                alive(proc)
                and "database unavailable while opening the database" in proc.err.read_text()
            ),
            120,
            "a logged retry of opening the database",
        )
        private_server.start()
        finish(lab, proc, items)
    finally:
        lab.cleanup()
