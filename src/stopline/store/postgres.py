"""The PostgreSQL store: psycopg 3, a small connection pool, LISTEN/NOTIFY for new work.

Transactions. The two hot writes are single statements in autocommit, each its own
transaction in one round trip: the claim, and an applied decision (the compare-and-set update
plus its event, as one ``WITH ... UPDATE ... INSERT`` statement). Every other write is one
transaction on a pooled connection (``BEGIN`` .. ``COMMIT``, rolled back on any error);
reads run in autocommit, one snapshot per statement. The default isolation (READ COMMITTED) is enough: every write is guarded by a compare-and-set on the item
version, the claim locks its row with ``FOR UPDATE SKIP LOCKED``, and registry changes and
ledger appends take advisory locks (``lock_registry``, ``lock_ledger``), so neither chain forks.

Reconnecting. A connection taken from the pool after sitting idle for more than
``CHECK_IDLE`` seconds is checked first (an empty query, one round trip); a broken one goes back
to the pool, which discards it and opens a replacement, and the next one is tried at once. So after a server restart or a killed backend the next transaction
runs on a fresh connection without delay (the pool's own ``check`` would sleep a backoff second
per broken connection). A failure *during* a transaction is not retried here:
it reaches the caller as :class:`psycopg.OperationalError`. That is deliberate. Only a failure
before ``COMMIT`` was sent is known to have written nothing, and the store cannot see where
the caller's statements stopped; a commit whose outcome is unknown must never be replayed
blindly. The caller re-reads the item and decides again, and the version guard makes that safe.

Waking workers: ``LISTEN``/``NOTIFY`` on a connection of its own (``pg_wakeups.py``); TCP
settings that end a connection to a server that vanished: ``pg_connect.py``.

Migrations run one by one, each in a transaction holding ``pg_advisory_xact_lock``: two hosts
starting at once apply each migration exactly once, the second one waiting for the first.
"""

from __future__ import annotations

import select
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Json
from psycopg.types.string import TextLoader
from psycopg_pool import ConnectionPool

from ..core.canonical import CanonicalError
from ..core.decision import Decision
from ..core.frozen import storage_json
from ..core.ledger import ledger_kind, shard_of
from .base import SQLStore, _Grouped, _shards, _Stale
from .discovery_turns import PoolTurn, take_pool_turn
from .documents import Documents
from .pg_connect import tcp_settings
from .pg_guard import PgGuardReads
from .pg_pipelined import pipelined_transaction
from .pg_wakeups import PgWakeups
from .rows import Row

MIGRATION_LOCK = "stopline.migrate"  # hashed into the advisory lock key
CHECK_IDLE = 1.0  # seconds: a pooled connection idle longer than this is checked before use


def probe(url: str, timeout: float) -> str | None:
    """One connection attempt of at most ``timeout`` seconds: ``None`` when the server took
    it, else the driver's first line of why not (no pool, so no retries and no warnings)."""
    try:
        conn = psycopg.connect(url, connect_timeout=max(1, round(timeout)), autocommit=True)
    except psycopg.Error as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        return lines[0] if lines else type(exc).__name__
    conn.close()
    return None


def _as_is(text: str) -> str:
    return text


def _configure(conn: psycopg.Connection[Any]) -> None:
    """Each pooled connection: ``json`` columns read as the text stored, as SQLite reads them
    (the row codecs parse it into read-only values in one pass, and an event row's text is the
    key of the check already made on it, ``rows.py``); and times read in UTC, whatever zone the
    server or the login sets, so that no time read back depends on a zone's rules."""
    conn.adapters.register_loader("json", TextLoader)
    conn.execute("SET TIME ZONE 'UTC'")


class PostgresStore(PgWakeups, PgGuardReads):
    dialect = "postgres"
    pyformat = True
    # A deadlock (two writes inserting the same new documents in another order) rolled back
    # the write whole: like a lost compare-and-set, the caller reads the item again.
    integrity_errors = (psycopg.errors.UniqueViolation, psycopg.errors.DeadlockDetected)

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 4,
        timeout: float = 30.0,
    ) -> None:
        """``timeout``: the longest wait for a pooled connection (also the connect timeout of
        the listening connection), after which :class:`psycopg_pool.PoolTimeout` is raised."""
        super().__init__(url)
        self.timeout = timeout
        self._pool: ConnectionPool[psycopg.Connection[DictRow]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            kwargs={"autocommit": True, "row_factory": dict_row, **tcp_settings(url)},
            configure=_configure,
            name="stopline",
            open=True,
        )
        self._last_used: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
        self._listen_lock = threading.Lock()
        self._listen_conn: psycopg.Connection[Any] | None = None

    def close(self) -> None:
        with self._listen_lock:
            self._drop_listener()
        self._pool.close()

    def discovery_turn(self, automation: str, wait: float) -> PoolTurn | None:
        return take_pool_turn(self._pool, self.q, automation, wait)

    # --- transactions ----------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[DictRow]]:
        """A pooled connection that answered a round trip just now.

        At most ``max_size`` broken connections are skipped (that empties a pool that a server
        restart left stale); the next one is used unchecked and any failure reaches the caller.
        """
        for skipped in range(self._pool.max_size + 1):
            with self._pool.connection() as conn:
                now = time.monotonic()
                idle = now - self._last_used.get(conn, 0.0)
                # A connection used a moment ago is not checked again (a round trip per write
                # would halve throughput); one that sat idle may have lost its server.
                suspect = idle > CHECK_IDLE or _readable(conn)
                if suspect and skipped < self._pool.max_size and not _alive(conn):
                    continue  # returned broken: the pool discards it and opens another
                try:
                    yield conn
                finally:
                    self._last_used[conn] = time.monotonic()
                return

    @contextmanager
    def _single(self) -> Iterator[Any]:
        """One statement in autocommit: its own transaction, one round trip."""
        with self._connection() as conn, conn.cursor() as cur:
            yield cur

    def _claiming(self) -> AbstractContextManager[Any]:
        return self._single()

    def _claimed_rows(self, cur: Any, params: Mapping[str, Any]) -> list[Row]:
        cur.execute(self.q["claim_batch"], params)  # its heads joined in the same statement
        return list(cur.fetchall())

    def apply(
        self,
        decision: Decision,
        *,
        idempotency: tuple[str, str, str] | None = None,
    ) -> bool:
        params = {
            **self._apply_params(decision),
            "ikey": None,
            "command_digest": None,
            "decision": None,
        }
        if idempotency is not None:
            key, command_digest, decision_json = idempotency
            params.update(ikey=key, command_digest=command_digest, decision=decision_json)
        kind = None if decision.event is None else ledger_kind(decision.event)
        if kind is not None:
            return self._apply_ledgered(decision, kind, params)
        try:
            with self._single() as cur:
                cur.execute(self.q["apply_decision"], params)
                row = cur.fetchone()
        except self.integrity_errors:
            return False  # a concurrent write took the same idempotency key (or event) first
        if row is None or int(row["n"]) != 1:
            return False
        self._written(params, decision)
        return True

    def _apply_ledgered(self, decision: Decision, kind: str, params: dict[str, Any]) -> bool:
        """A decision whose event goes into the ledger: one transaction in two round trips.
        The shard's lock, then the writes of ``apply_decision`` with the shard's last entry
        (read after the lock), pipelined; then the entry, made on that last one, and COMMIT."""
        assert decision.event is not None
        shard = shard_of(params["id"])
        try:
            with self._connection() as conn:
                lock, cur = conn.cursor(), conn.cursor()
                with pipelined_transaction(conn, lock):
                    lock.execute(self.q["lock_ledger"], {"shard": shard})
                    cur.execute(self.q["apply_decision_ledgered"], {**params, "shard": shard})
                    row = cur.fetchone()
                    if row is None or int(row["n"]) != 1:
                        raise _Stale()  # a lost race wrote nothing: roll back the lock
                    last = None if row["last_n"] is None else (row["last_n"], row["last_hash"])
                    self._insert_ledger_entry(cur, kind, decision.event, shard, last)
        except _Stale:
            return False
        except self.integrity_errors:
            return False  # a concurrent write took the same idempotency key (or event) first
        self._written(params, decision)
        return True

    def _apply_grouped(self, rows: Sequence[_Grouped]) -> list[bool]:
        """One transaction in two round trips. First, pipelined: the locks of the shards the
        group appends to (in shard order), the last entry of each (read after its lock), and
        per row the one-statement write of ``apply_decision`` (compare-and-set, then the event
        only when it took). Then the ledger entries of the rows written, each made on the last
        one of its shard, and COMMIT."""
        params = [
            {**r.params, "ikey": None, "command_digest": None, "decision": None} for r in rows
        ]
        shards = _shards(rows)
        written: list[bool] = []
        with self._connection() as conn:
            lock, lasts, cur = conn.cursor(), conn.cursor(), conn.cursor()
            with pipelined_transaction(conn, lock):
                for shard in shards:
                    lock.execute(self.q["lock_ledger"], {"shard": shard})
                if shards:
                    lasts.execute(self.q["last_ledgers"], {"shards": shards})
                cur.executemany(self.q["apply_decision"], params, returning=True)
                while True:
                    row = cur.fetchone()
                    written.append(row is not None and int(row["n"]) == 1)
                    if not cur.nextset():
                        break
                last = {}
                if shards:
                    last = {int(r["shard"]): (r["n"], r["hash"]) for r in lasts.fetchall()}
                for grouped, ok in zip(rows, written, strict=True):
                    if ok and grouped.kind is not None:
                        shard, event = grouped.shard, grouped.event
                        last[shard] = self._insert_entry(
                            lock,
                            shard,
                            last.get(shard),
                            grouped.kind,
                            event.item_id,
                            event.seq,
                            event.hash,
                            event.at,
                        )
        return written

    @contextmanager
    def _write(self) -> Iterator[Any]:
        with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    @contextmanager
    def _read(self) -> Iterator[Any]:
        with self._connection() as conn, conn.cursor() as cur:
            yield cur

    def _read_all(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[Any]]:
        """The statements in one snapshot (a read-only REPEATABLE READ transaction: a change
        committed meanwhile is seen whole or not at all), pipelined: sent together and read
        after one round trip (the registry's five reads were five round trips)."""
        if len(statements) == 1:  # one statement reads one snapshot of its own
            return super()._read_all(statements)
        with self._connection() as conn:
            cursors = [conn.cursor() for _ in statements]
            snapshot = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
            try:
                with pipelined_transaction(conn, conn.cursor(), begin=snapshot):
                    for cur, (sql, params) in zip(cursors, statements, strict=True):
                        cur.execute(sql, params)
                return [cur.fetchall() for cur in cursors]
            finally:
                for cur in cursors:
                    cur.close()

    # --- value codecs ------------------------------------------------------------------------

    def _time(self, value: datetime | None) -> Any:
        if value is not None and value.utcoffset() is None:
            # timestamptz would silently read a naive time in the session's time zone
            raise CanonicalError("naive datetime has no canonical form; pass a timezone-aware time")
        return value

    @staticmethod
    def _from_time(value: Any) -> datetime | None:
        found = SQLStore._from_time(value)
        return None if found is None else found.astimezone(UTC)

    def _as_read(self, param: Any) -> Any:
        return param.obj if isinstance(param, Json) else param

    def _json(self, value: Any) -> Any:
        # ``json``, not ``jsonb``: the stored text is kept exactly, so digests and event hashes
        # recompute from it (jsonb would rewrite some numbers and refuse NUL characters). The
        # text is made once, here: the parameter carries it, and the cache of what was written
        # (``_as_read``) takes it from the parameter instead of serialising the value again.
        return Json(storage_json(value), dumps=_as_is)

    def _automations_param(self, automations: Sequence[str] | None) -> Any:
        return None if automations is None else list(automations)

    def _documents_params(self, documents: Documents) -> dict[str, Any]:
        # array literals (cast to text[] by the query): no driver regex call per quote of a body
        return {
            "doc_digests": _text_array(d for d, _ in documents),
            "doc_bodies": _text_array(b for _, b in documents),
        }

    # --- schema ----------------------------------------------------------------------------

    def schema_version(self) -> int:
        with self._read() as cur:
            cur.execute("SELECT to_regclass('schema_migrations') IS NOT NULL AS found")
            if not cur.fetchone()["found"]:
                return 0
            cur.execute("SELECT MAX(version) AS v FROM schema_migrations")
            return int(cur.fetchone()["v"] or 0)

    def _apply_migration(self, version: int, name: str, sql: str) -> bool:
        with self._connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (MIGRATION_LOCK,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY,"
                " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = conn.execute(
                "SELECT 1 FROM schema_migrations WHERE version = %s", (version,)
            ).fetchone()
            if done:
                return False
            conn.execute(sql)  # no parameters: the whole script in one simple query
            with conn.cursor() as cur:
                self._after_migration(version, cur)
            conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name)
            )
        return True


def _text_array(texts: Iterable[str]) -> str:
    """``texts`` as a PostgreSQL array literal, each quoted (its ``\\`` and ``"`` escaped)."""
    quoted = ('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"' for t in texts)
    return "{" + ",".join(quoted) + "}"


def _readable(conn: psycopg.Connection[Any]) -> bool:
    """An idle connection with something to read has been told goodbye by its server (a
    terminated backend, a restart): a cheap system call instead of a round trip."""
    try:
        ready, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.OperationalError):
        return True
    return bool(ready)


def _alive(conn: psycopg.Connection[Any]) -> bool:
    try:
        conn.execute("")
    except psycopg.OperationalError:
        return False
    return True
