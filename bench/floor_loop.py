"""The floor under one step at a time: the raw loop doing what stopline's guarantees need.

The raw loop (``raw.py``) writes a tiny row and a tiny event per step. A stopline transition,
one at a time, must also write what makes it tamper-evident and checkable, whatever code
writes it. This loop does exactly that and nothing else, in the same worker processes and
with the same claim as the raw loop:

- the item's row carries its data (about 900 bytes of sorted JSON) and its seal (the SHA-256
  of that text); the outcome updates it guarded by the lease token and the version;
- the event's row carries its body (about 400 bytes) and its hash, chained to the item's
  previous head;
- three steps of five (as three of a no-op item's five transitions) also append an entry to
  one of 16 ledger shards: the shard's lock, its last entry read after the lock, the entry
  chained to it, all in the outcome's transaction; and before such a step, the check before
  acting: the item's events read back and their hash chain checked.

On PostgreSQL a ledgered outcome is one round trip (BEGIN, the shard's lock, one statement
that writes the item, the event and the ledger entry the server chains to the shard's last,
COMMIT, pipelined: fewer than stopline's two); a plain outcome is one statement, as the raw
loop's. On SQLite every outcome is one ``BEGIN IMMEDIATE``
transaction. The figure against the raw loop in the same run is the highest ratio any
implementation of these guarantees could reach with this Python and these drivers.

    bench/.venv/bin/python bench/floor_loop.py --items 1000 --workers 1,4
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import orjson

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

import raw  # noqa: E402
from common import BenchConfig  # noqa: E402

STEPS = 5
SHARDS = 16
LEDGERED = {0, 2, 4}  # the step numbers (item versions) whose outcome appends to the ledger


def _sha(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()


def item_text(item_id: int, version: int, owner: str) -> bytes:
    """An item's data as a seal covers it, at about the size stopline writes."""
    now = "2026-12-07T01:00:00.000000+00:00"
    return orjson.dumps(
        {
            "id": f"it_{item_id:016x}",
            "automation": "noop",
            "key": f"k{item_id}",
            "state": f"s{version}",
            "version": version,
            "seq": version,
            "created_at": now,
            "updated_at": now,
            "attempts": 0,
            "max_attempts": 3,
            "next_eligible_at": now,
            "lease_owner": owner,
            "lease_expires_at": now,
            "claimed_at": now,
            "attempt_log": [],
            "data": {
                "evidence": {"ok": True, "digest": "b" * 64},
                "proposal": {"action": "noop", "digest": "c" * 64, "max_evidence_age": 3600},
                "step": {"state": f"s{version}", "at": now},
                "execution": {"id": "x1", "digest": "d" * 64},
            },
        },
        option=orjson.OPT_SORT_KEYS,
    )


def event_text(item_id: int, version: int, owner: str, prev: str, seal: str) -> bytes:
    return orjson.dumps(
        {
            "item_id": f"it_{item_id:016x}",
            "seq": version + 1,
            "at": "2026-12-07T01:00:00.000000+00:00",
            "command": "step",
            "actor": owner,
            "from_state": f"s{version}",
            "to_state": f"s{version + 1}",
            "reasons": [],
            "digests": {"seal": seal},
            "detail": {"author": {"kind": "automation"}},
            "prev_hash": prev,
        },
        option=orjson.OPT_SORT_KEYS,
    )


def check_history(rows: list[tuple[bytes | str, str]]) -> None:
    """The check before acting: every event's hash again, and the chain between them."""
    prev = ""
    for body, digest in rows:
        data = body.encode() if isinstance(body, str) else body
        if _sha(data) != digest or orjson.loads(data)["prev_hash"] != prev:
            raise RuntimeError("history does not hold")
        prev = digest


def _outcome_parts(item_id: int, version: int, head: str, token: str) -> dict[str, Any]:
    data = item_text(item_id, version + 1, token)
    seal = _sha(data)
    body = event_text(item_id, version, token, head, seal)
    digest = _sha(body)
    return {
        "id": item_id,
        "version": version,
        "token": token,
        "state": "done" if version + 1 >= STEPS else "ready",
        "data": data.decode(),
        "seal": seal,
        "head": digest,
        "seq": version + 1,
        "body": body.decode(),
        "shard": item_id % SHARDS,
    }


# --------------------------------------------------------------------------- PostgreSQL

PG_SCHEMA = """
ALTER TABLE items ADD COLUMN head text NOT NULL DEFAULT '';
ALTER TABLE items ADD COLUMN data text NOT NULL DEFAULT '';
ALTER TABLE items ADD COLUMN seal text NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN body text;
ALTER TABLE events ADD COLUMN hash text;
CREATE INDEX events_item ON events (item_id, id);
CREATE TABLE ledger (
    shard integer NOT NULL, n bigint NOT NULL, item_id bigint NOT NULL, seq integer NOT NULL,
    event_hash text NOT NULL, prev_hash text NOT NULL, hash text NOT NULL,
    PRIMARY KEY (shard, n));
"""

PG_CLAIM = raw.PG_CLAIM.replace("RETURNING id, version", "RETURNING id, version, head")

# The outcome's writes as common table expressions: the guarded update, then (only when it
# took) the event with its body and hash.
PG_WRITES = """
WITH u AS (
    UPDATE items
       SET state = %(state)s, lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
           next_eligible_at = now(), version = version + 1, head = %(head)s, data = %(data)s,
           seal = %(seal)s
     WHERE id = %(id)s AND lease_token = %(token)s AND version = %(version)s
    RETURNING id, state
), e AS (
    INSERT INTO events (item_id, from_version, to_state, lease_token, at, body, hash)
    SELECT id, %(version)s, state, %(token)s, now(), %(body)s, %(head)s FROM u
    RETURNING item_id
)
"""
PG_PLAIN = PG_WRITES + "SELECT count(*) FROM e"
# The ledgered outcome, sent once the shard's lock is held: the writes, and the ledger entry
# chained by the server to the shard's last one, read in this statement's snapshot, taken
# after the lock (so no later append can come before it).
PG_LEDGERED = (
    PG_WRITES.rstrip()
    + """, l AS (
    INSERT INTO ledger
    SELECT %(shard)s, coalesce(last.n, 0) + 1, e.item_id, %(seq)s, %(head)s,
           coalesce(last.hash, ''),
           encode(sha256(convert_to(coalesce(last.hash, '') || %(head)s, 'UTF8')), 'hex')
      FROM e LEFT JOIN LATERAL (SELECT n, hash FROM ledger WHERE shard = %(shard)s
                                 ORDER BY n DESC LIMIT 1) AS last ON true
    RETURNING n
)
SELECT count(*) FROM l"""
)
PG_HISTORY = "SELECT body, hash FROM events WHERE item_id = %s ORDER BY id"


class SealedPgLoop(raw.PgLoop):
    head = ""

    def claim(self, owner: str, token: str) -> tuple[int, int] | None:
        row = self.conn.execute(PG_CLAIM, (owner, token, raw.LEASE_SECONDS)).fetchone()
        if row is None:
            return None
        self.head = row[2]
        return (row[0], row[1])

    def outcome(self, item_id: int, version: int, token: str, steps: int) -> bool:
        p = _outcome_parts(item_id, version, self.head, token)
        conn = self.conn
        if version not in LEDGERED:
            return conn.execute(PG_PLAIN, p).fetchone()[0] == 1
        check_history(conn.execute(PG_HISTORY, (item_id,)).fetchall())
        with conn.pipeline():
            conn.execute("BEGIN")
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext('floor.ledger'), %s)", (p["shard"],)
            )
            cur = conn.execute(PG_LEDGERED, p)
            conn.execute("COMMIT")
        return cur.fetchone()[0] == 1


# --------------------------------------------------------------------------- SQLite

SQLITE_SCHEMA = """
ALTER TABLE items ADD COLUMN head TEXT NOT NULL DEFAULT '';
ALTER TABLE items ADD COLUMN data TEXT NOT NULL DEFAULT '';
ALTER TABLE items ADD COLUMN seal TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN body TEXT;
ALTER TABLE events ADD COLUMN hash TEXT;
CREATE INDEX events_item ON events (item_id, id);
CREATE TABLE ledger (
    shard INTEGER NOT NULL, n INTEGER NOT NULL, item_id INTEGER NOT NULL, seq INTEGER NOT NULL,
    event_hash TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL,
    PRIMARY KEY (shard, n));
"""

SQLITE_CLAIM = raw.SQLITE_CLAIM.replace("RETURNING id, version", "RETURNING id, version, head")
SQLITE_UPDATE = """
UPDATE items
   SET state = :state, lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
       next_eligible_at = :now, version = version + 1, head = :head, data = :data, seal = :seal
 WHERE id = :id AND lease_token = :token AND version = :version
"""


SQLITE_EVENT = (
    "INSERT INTO events (item_id, from_version, to_state, lease_token, at, body, hash)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)


class SealedSqliteLoop(raw.SqliteLoop):
    head = ""

    def claim(self, owner: str, token: str) -> tuple[int, int] | None:
        now = time.time()
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            row = c.execute(
                SQLITE_CLAIM, (owner, token, now + raw.LEASE_SECONDS, now, now)
            ).fetchone()
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        if row is None:
            return None
        self.head = row[2]
        return (row[0], row[1])

    def outcome(self, item_id: int, version: int, token: str, steps: int) -> bool:
        p = _outcome_parts(item_id, version, self.head, token)
        p["now"] = time.time()
        c = self.conn
        if version in LEDGERED:
            rows = c.execute(
                "SELECT body, hash FROM events WHERE item_id = ? ORDER BY id", (item_id,)
            ).fetchall()
            check_history(rows)
        c.execute("BEGIN IMMEDIATE")
        try:
            took = c.execute(SQLITE_UPDATE, p).rowcount == 1
            if took:
                c.execute(
                    SQLITE_EVENT,
                    (item_id, version, p["state"], token, p["now"], p["body"], p["head"]),
                )
                if version in LEDGERED:
                    last = c.execute(
                        "SELECT n, hash FROM ledger WHERE shard = ? ORDER BY n DESC LIMIT 1",
                        (p["shard"],),
                    ).fetchone()
                    n, prev = last if last else (0, "")
                    c.execute(
                        "INSERT INTO ledger VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (
                            p["shard"],
                            n + 1,
                            item_id,
                            p["seq"],
                            p["head"],
                            prev,
                            _sha(f"{prev}{p['head']}".encode()),
                        ),
                    )
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        return took


# --------------------------------------------------------------------------- groups (PostgreSQL)

PG_CLAIM_GROUP = """
UPDATE items
   SET attempts = attempts + 1, lease_owner = %s, lease_token = %s,
       lease_expires_at = now() + make_interval(secs => %s)
 WHERE id IN (SELECT id FROM items
               WHERE state = 'ready' AND next_eligible_at <= now()
                 AND (lease_expires_at IS NULL OR lease_expires_at < now())
               ORDER BY next_eligible_at
               LIMIT %s
               FOR UPDATE SKIP LOCKED)
RETURNING id, version, head
"""
PG_HISTORIES = "SELECT item_id, body, hash FROM events WHERE item_id = ANY(%s) ORDER BY item_id, id"


def grouped_main(
    target: str, group: int, steps: int, worker_no: int, start: Any, results: Any
) -> None:
    """raw.worker_main for groups: claim up to ``group`` items in one statement, check the
    histories of those about to append to the ledger in one read, and commit every outcome in
    one transaction (the shards' locks in order, each outcome its own guarded statement)."""
    import os

    import psycopg

    conn = psycopg.connect(target, autocommit=True)
    owner = f"w{worker_no}-{os.getpid()}"
    results.put(("ready", worker_no))
    start.wait()
    cpu = time.process_time()
    done = lost = empty = 0
    try:
        while True:
            token = os.urandom(12).hex()
            claimed = conn.execute(
                PG_CLAIM_GROUP, (owner, token, raw.LEASE_SECONDS, group)
            ).fetchall()
            if not claimed:
                if conn.execute("SELECT 1 FROM items WHERE state = 'ready' LIMIT 1").fetchone():
                    empty += 1
                    time.sleep(0.0005)
                    continue
                break
            ledgered = [i for i, version, _ in claimed if version in LEDGERED]
            if ledgered:
                histories: dict[int, list[tuple[str, str]]] = {}
                for item_id, body, digest in conn.execute(PG_HISTORIES, (ledgered,)):
                    histories.setdefault(item_id, []).append((body, digest))
                for item_id in ledgered:
                    check_history(histories.get(item_id, []))
            parts = [_outcome_parts(i, v, head, token) for i, v, head in claimed]
            with conn.pipeline():
                conn.execute("BEGIN")
                for shard in sorted({p["shard"] for p in parts if p["version"] in LEDGERED}):
                    conn.execute(
                        "SELECT pg_advisory_xact_lock(hashtext('floor.ledger'), %s)", (shard,)
                    )
                cursors = [
                    conn.execute(PG_LEDGERED if p["version"] in LEDGERED else PG_PLAIN, p)
                    for p in parts
                ]
                conn.execute("COMMIT")
            took = sum(c.fetchone()[0] for c in cursors)
            done += took
            lost += len(parts) - took
    except BaseException as exc:
        results.put(("error", worker_no, repr(exc)))
        raise
    finally:
        conn.close()
    finished_at = time.monotonic()
    results.put(("done", worker_no, done, lost, empty, finished_at, time.process_time() - cpu))


def open_loop(store: str, target: str, option: str) -> raw.SqliteLoop | raw.PgLoop:
    """raw.py's loop for ``option`` "sealed:<sync>" (SQLite) or "sealed" (PostgreSQL)."""
    if store == "sqlite":
        return SealedSqliteLoop(target, option.split(":", 1)[1])
    return SealedPgLoop(target, "sealed")


def init(store: str, target: str) -> None:
    """Add the floor's columns and tables to a store raw.py has just made."""
    if store == "sqlite":
        conn = sqlite3.connect(target, isolation_level=None)
        conn.executescript(SQLITE_SCHEMA)
        conn.close()
        return
    import psycopg

    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute(PG_SCHEMA)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--items", type=int, default=1000)
    p.add_argument("--workers", default="1,4")
    p.add_argument("--stores", default="sqlite,pg")
    p.add_argument("--rounds", type=int, default=2, help="raw then floor, alternated")
    p.add_argument("--group", type=int, default=1, help="PostgreSQL: outcomes per commit")
    args = p.parse_args(argv)
    cfg = BenchConfig(items=args.items, steps_per_item=STEPS, scenario_timeout=600.0)
    workers = [int(w) for w in args.workers.split(",")]
    print(f"{args.items} items x {STEPS} steps; per second, raw loop / floor (ratio)")
    for store in args.stores.split(","):
        for w in workers:
            for _ in range(args.rounds):
                plain = raw.run_loop(cfg, store, w)
                floor = raw.run_loop(cfg, store, w, floor=args.group if store == "pg" else 1)
                for row in (plain, floor):
                    if row.get("error"):
                        print(f"  {row['store']}: {row['error']}")
                a, b = plain.get("rate") or 0.0, floor.get("rate") or 0.0
                print(
                    f"{store:6} {w} worker(s): {a:8.1f} / {b:8.1f} ({b / a if a else 0:.2f}x);"
                    f" worker CPU ms per step {plain['details'].get('cpu_ms_per_op')} /"
                    f" {floor['details'].get('cpu_ms_per_op')};"
                    f" server {plain['details'].get('db_cpu_ms_per_op')} /"
                    f" {floor['details'].get('db_cpu_ms_per_op')}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
