"""The PostgreSQL store's pipelined transaction (``BEGIN`` and ``COMMIT`` sent in the pipeline):
all of it or nothing, whichever statement or block fails, ``COMMIT`` included."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg import errors
from psycopg.pq import TransactionStatus

from stopline.store.pg_pipelined import pipelined_transaction

pytestmark = pytest.mark.postgres


@pytest.fixture
def conn(blank_postgres_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(blank_postgres_url, autocommit=True) as opened:
        opened.execute("CREATE TABLE t (k int PRIMARY KEY)")
        opened.execute(
            "CREATE TABLE d (k int, CONSTRAINT d_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)"
        )
        yield opened


def rows(conn: psycopg.Connection[tuple[object, ...]], table: str) -> list[int]:
    with psycopg.connect(conn.info.dsn, autocommit=True) as other:  # what others see
        return [int(r[0]) for r in other.execute(f"SELECT k FROM {table} ORDER BY k")]


def idle(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    return conn.info.transaction_status is TransactionStatus.IDLE


def test_the_block_commits_as_one(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    cur = conn.cursor()
    with pipelined_transaction(conn, cur):
        cur.execute("INSERT INTO t VALUES (1)")
        cur.execute("INSERT INTO t VALUES (2) RETURNING k")
        assert cur.fetchone() == (2,)  # a result read midway (a sync) keeps the transaction
        assert rows(conn, "t") == []  # not committed yet
        cur.execute("INSERT INTO t VALUES (3)")
    assert rows(conn, "t") == [1, 2, 3] and idle(conn)


def test_an_exception_of_the_block_rolls_everything_back(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    cur = conn.cursor()
    with pytest.raises(LookupError), pipelined_transaction(conn, cur):
        cur.execute("INSERT INTO t VALUES (1) RETURNING k")
        cur.fetchone()
        raise LookupError("the caller's own reason to stop")
    assert rows(conn, "t") == [] and idle(conn)
    conn.execute("INSERT INTO t VALUES (1)")  # and the connection serves on
    assert rows(conn, "t") == [1]


def test_a_failed_statement_rolls_back_the_ones_before_it(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    conn.execute("INSERT INTO t VALUES (5)")
    cur = conn.cursor()
    with pytest.raises(errors.UniqueViolation), pipelined_transaction(conn, cur):
        cur.execute("INSERT INTO t VALUES (4)")
        cur.execute("INSERT INTO t VALUES (5)")  # raised when the pipeline syncs
        cur.execute("INSERT INTO t VALUES (6)")
    assert rows(conn, "t") == [5] and idle(conn)


def test_a_commit_that_fails_raises_and_keeps_nothing(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    """A deferred constraint is checked by ``COMMIT`` itself: its failure is raised, never
    taken for a commit."""
    cur = conn.cursor()
    with pytest.raises(errors.UniqueViolation), pipelined_transaction(conn, cur):
        cur.execute("INSERT INTO d VALUES (1)")
        cur.execute("INSERT INTO d VALUES (1)")
    assert rows(conn, "d") == [] and idle(conn)


def test_a_connection_lost_midway_raises_its_own_error(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    cur = conn.cursor()
    pid = conn.info.backend_pid
    with pytest.raises(psycopg.OperationalError), pipelined_transaction(conn, cur):
        cur.execute("INSERT INTO t VALUES (1) RETURNING k")
        cur.fetchone()
        with psycopg.connect(conn.info.dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
        cur.execute("INSERT INTO t VALUES (2) RETURNING k")
        cur.fetchone()
    assert conn.closed or conn.broken
    assert rows(conn, "t") == []


def test_a_read_only_snapshot_refuses_a_write_and_ends(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    """The store's multi-statement reads begin their own way (one read-only snapshot)."""
    cur, tx = conn.cursor(), conn.cursor()
    begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
    with pytest.raises(errors.ReadOnlySqlTransaction), pipelined_transaction(conn, tx, begin):
        cur.execute("SELECT count(*) FROM t")
        cur.execute("INSERT INTO t VALUES (1)")
    assert rows(conn, "t") == [] and idle(conn)
    with pipelined_transaction(conn, tx, begin):
        cur.execute("SELECT count(*) FROM t")
    assert cur.fetchall() == [(0,)] and idle(conn)
