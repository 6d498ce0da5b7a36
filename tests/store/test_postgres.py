"""What only the PostgreSQL store does: migration lock, reconnects, NOTIFY, the claim's index."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import psycopg_pool.pool
import pytest

from helpers import T0, decide_at, discover, waiting_for_advisory_lock
from proc import wait_for
from stopline.core.commands import Failure, NeedsEyes
from stopline.core.ledger import REGISTRY, shard_of
from stopline.core.records import Actor
from stopline.store import open_store, raw
from stopline.store.pg_wakeups import CHANNEL
from stopline.store.postgres import PostgresStore
from stopline.store.queries import migrations
from stopline.verification import verify_store

S = timedelta(seconds=1)


@pytest.fixture
def pg(postgres_url: str) -> Iterator[PostgresStore]:
    """A PostgreSQL store on a fresh database, closed after the test."""
    store = PostgresStore(postgres_url)
    try:
        yield store
    finally:
        store.close()


def kill(admin: Any, pids: list[int]) -> None:
    """End server sessions as a server restart would, waiting until they are gone."""
    for pid in pids:
        admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))


def sessions(admin: Any, store: PostgresStore) -> list[int]:
    """The server sessions connected to the store's database (the admin's excluded)."""
    dbname = store.url.rsplit("/", 1)[1]
    rows = admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        (dbname,),
    ).fetchall()
    return [int(r[0]) for r in rows]


def test_concurrent_migrators_apply_each_migration_once(blank_postgres_url: str) -> None:
    """Hosts migrating the same empty database at once apply each migration exactly once."""
    barrier = threading.Barrier(4)
    results: list[list[int]] = []

    def migrator() -> None:
        store = PostgresStore(blank_postgres_url)
        try:
            barrier.wait()
            results.append(store.migrate())
        finally:
            store.close()

    threads = [threading.Thread(target=migrator) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Migrations are applied one by one, each under the lock: which host applies which one is
    # a race, but every migration is applied exactly once.
    assert len(results) == 4
    assert sorted(v for applied in results for v in applied) == [
        version for version, _, _ in migrations("postgres")
    ]
    store = open_store(blank_postgres_url, migrate=False)  # the schema check passes
    store.close()


def test_store_reconnects_after_its_sessions_are_killed(
    pg: PostgresStore, postgres_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After every session is killed (as by a server restart) the next calls just work: the
    broken connections are skipped, never checked and backed off by the pool."""
    item = discover(pg, "k1")
    assert sessions(postgres_server.admin, pg)
    kill(postgres_server.admin, sessions(postgres_server.admin, pg))
    caller = threading.get_ident()
    backoffs: list[float] = []
    real_sleep = psycopg_pool.pool.sleep

    def sleep(seconds: float) -> None:  # the pool's backoff between checks of a connection
        if threading.get_ident() == caller:
            backoffs.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(psycopg_pool.pool, "sleep", sleep)
    assert pg.get(item.id) == item
    assert backoffs == []
    claimed = pg.claim("w1", T0, 30)
    assert claimed is not None and claimed.id == item.id


def test_a_transaction_broken_midway_is_neither_retried_nor_half_written(
    pg: PostgresStore, postgres_server: Any
) -> None:
    """A connection lost inside a write raises; nothing of the write is kept."""
    with pytest.raises(psycopg.OperationalError), raw.writing(pg) as cur:
        cur.execute(pg.q["set_schedule"], {"automation": "auto", "at": T0})
        cur.execute("SELECT pg_backend_pid() AS pid")
        kill(postgres_server.admin, [cur.fetchone()["pid"]])
        cur.execute("SELECT 1")
    assert pg.last_discovery("auto") is None
    pg.set_last_discovery("auto", T0)  # and the store carries on
    assert pg.last_discovery("auto") == T0


def waited(store: PostgresStore, timeout: float) -> float:
    """Seconds that ``wait_for_work(timeout)`` blocked."""
    start = time.monotonic()
    store.wait_for_work(timeout)
    return time.monotonic() - start


def settle(store: PostgresStore) -> None:
    """Consume every notification sent so far: send a marker after them and read up to it
    (each listener gets notifications in commit order)."""
    with psycopg.connect(store.url, autocommit=True) as conn:
        conn.execute("SELECT pg_notify(%s, 'settle')", (CHANNEL,))
    listener = store.listening
    assert listener is not None
    for note in listener.notifies(timeout=60):
        if note.payload == "settle":
            return
    pytest.fail("the marker notification never arrived")


def test_wait_for_work_wakes_when_work_is_written(pg: PostgresStore, postgres_url: str) -> None:
    """A waiting store wakes as soon as another one commits a new work item."""
    pg.wait_for_work(0)  # starts listening
    other = open_store(postgres_url)
    timer = threading.Timer(0.2, discover, args=(other, "k1"))
    timer.start()
    try:
        assert waited(pg, 10) < 5
    finally:
        timer.join()
        other.close()


def test_only_committed_work_states_wake_waiters(pg: PostgresStore) -> None:
    """Claims, stop states and rolled-back writes send no notification; a retry does."""
    pg.wait_for_work(0)  # starts listening
    first = discover(pg, "k1")
    discover(pg, "k2", at=T0 + S)
    assert waited(pg, 5) < 4  # the discoveries' notifications
    settle(pg)
    one = pg.claim("w1", T0 + S, 30)
    assert one is not None and one.id == first.id
    stop = decide_at(one, NeedsEyes("w1", one.lease_token, "ops", "why"), T0 + S)
    assert pg.apply(stop, idempotency=("key", "digest", "{}"))
    two = pg.claim("w1", T0 + S, 30)
    assert two is not None
    retry = decide_at(two, Failure("w1", two.lease_token, "boom", "x", True), T0 + S)
    assert not pg.apply(retry, idempotency=("key", "other", "{}"))  # rolled back
    assert waited(pg, 0.5) >= 0.5
    assert pg.apply(retry)
    assert waited(pg, 5) < 4


def test_wait_for_work_survives_a_killed_listener(
    pg: PostgresStore, postgres_url: str, postgres_server: Any
) -> None:
    """If the listening session dies, the wait returns at once and listening resumes."""
    pg.wait_for_work(0)
    listener = pg.listening
    assert listener is not None
    kill(postgres_server.admin, [listener.info.backend_pid])
    assert waited(pg, 10) < 5
    discover(pg, "k1")
    assert waited(pg, 10) < 5


def test_claim_uses_the_due_index_at_scale(pg: PostgresStore) -> None:
    """With 10^5 items (10% work) the claim plans over the partial due index."""
    with raw.writing(pg) as cur:
        cur.execute(
            "INSERT INTO items (id, automation, key, state, state_class, version, seq, head,"
            " created_at, updated_at, attempts, max_attempts, next_eligible_at, data)"
            " SELECT 'bulk-' || n, 'auto', 'k' || n,"
            "  CASE WHEN mod(n, 10) = 0 THEN 'observing' ELSE 'closed' END,"
            "  CASE WHEN mod(n, 10) = 0 THEN 'work' ELSE 'terminal' END,"
            "  1, 1, '', %(t)s, %(t)s, 0, 3, %(t)s + n * interval '1 second', '{}'"
            " FROM generate_series(1, 100000) AS n",
            {"t": T0},
        )
    with raw.reading(pg) as cur:
        cur.execute("ANALYZE items")
        params = {
            "worker": "w",
            "now": T0 + 50000 * S,
            "expires_at": T0,
            "automations": None,
            "leases": None,
        }
        cur.execute("EXPLAIN " + pg.q["claim"], params)
        plan = "\n".join(row["QUERY PLAN"] for row in cur.fetchall())
    assert "items_due" in plan, plan
    claimed = pg.claim("w", T0 + 50000 * S, 30)
    assert claimed is not None and claimed.id == "bulk-10"


def test_a_registry_change_waits_for_the_lock_of_its_ledger_shard(
    pg: PostgresStore, postgres_server: Any
) -> None:
    """A registry change appends its ledger entry under the lock of the registry's shard, which
    items hashed to that shard share: while another session holds that lock, the change waits
    (it never reads the shard's last entry beside an append that has not committed)."""
    holder = psycopg.connect(pg.url)  # a transaction open until rollback
    try:
        holder.execute(
            "SELECT pg_advisory_xact_lock(hashtext('stopline.ledger'), %s)", (shard_of(REGISTRY),)
        )
        done = threading.Event()

        def change() -> None:
            pg.set_actor(Actor("alice", frozenset({"approver"})), "add", {}, T0)
            done.set()

        writer = threading.Thread(target=change, daemon=True)
        writer.start()

        def waiting() -> bool:
            return waiting_for_advisory_lock(postgres_server.admin, pg.url)

        # the change is seen waiting for the lock, or it ends without ever taking it
        wait_for(lambda: waiting() or done.is_set(), 120, "the registry change to wait")
        assert not done.is_set(), "the registry change appended without the shard's lock"
        holder.rollback()
        writer.join(60)
        assert done.is_set()
    finally:
        holder.close()
    assert verify_store(pg).findings == []
