"""The floor under a grouped transition's worker CPU: its irreducible parts, timed alone.

A transition of the no-op path, in lockstep at batch 50 on PostgreSQL, costs the worker about
three times the raw loop's step. This script asks how much of that the guarantees themselves
need, in this Python, with this driver: it times, in one process,

- the SHA-256 of an item's seal document (about 900 bytes of sorted JSON) and of an event's
  body (about 400 bytes), made with orjson;
- a group of 50 decisions written in one transaction through psycopg's pipeline, each three
  rows (the item's version-checked update, its event, a ledger entry), hashed as they go:
  the client's CPU per decision;
- stopline's own worker, in process, draining no-op items in lockstep at batch 50 with 50
  claimed ahead: its CPU per transition.

A transition needs one such decision, a fifth of a claim, and, for three transitions of five,
the check before acting (the item's few events read and hashed again). The floor is what a
worker that did nothing else would spend; the difference to stopline's figure is what its
layers cost (records made and copied, the seal's exact canonical form and its checks, the
step drivers, logs and counters).

    bench/.venv/bin/python bench/floor.py
    bench/.venv/bin/python bench/floor.py --items 3000 --rounds 400
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from common import BenchConfig, temp_database, url_for  # noqa: E402

GROUP = 50


def _documents() -> tuple[dict[str, Any], dict[str, Any]]:
    """An item as its seal covers it, and an event body, of the sizes stopline writes."""
    now = datetime.now(UTC).isoformat()
    item = {
        "id": "it_0123456789abcdef",
        "automation": "noop",
        "key": "k123",
        "state": "delivering",
        "version": 4,
        "seq": 4,
        "head": "a" * 64,
        "created_at": now,
        "updated_at": now,
        "attempts": 0,
        "max_attempts": 3,
        "next_eligible_at": now,
        "lease_owner": "w-1234",
        "lease_expires_at": now,
        "claimed_at": now,
        "attempt_log": [],
        "data": {
            "evidence": {"ok": True, "digest": "b" * 64},
            "proposal": {"action": "noop", "digest": "c" * 64, "max_evidence_age": 3600},
            "step": {"state": "delivering", "at": now},
            "execution": {"id": "x1", "digest": "d" * 64},
        },
    }
    event = {
        "item_id": item["id"],
        "seq": 5,
        "at": now,
        "command": "deliver",
        "actor": "w-1234",
        "from_state": "executing",
        "to_state": "delivering",
        "reasons": [],
        "digests": {"seal": "e" * 64},
        "detail": {"author": {"kind": "automation"}},
        "prev_hash": "a" * 64,
    }
    return item, event


def _digest(doc: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()


def hash_us(doc: dict[str, Any], n: int = 20000) -> float:
    start = time.process_time()
    for _ in range(n):
        _digest(doc)
    return 1e6 * (time.process_time() - start) / n


def group_write_us(url: str, rounds: int) -> float:
    """Client CPU per decision of ``rounds`` groups of 50, each decision three rows."""
    import psycopg

    item, event = _documents()
    ids = [f"it{i}" for i in range(GROUP)]
    with psycopg.connect(url) as conn:
        conn.execute(
            "CREATE TABLE items (id text PRIMARY KEY, state text, version int, seq int,"
            " head text, data text, lease_token bigint)"
        )
        conn.execute(
            "CREATE TABLE events (item_id text, seq int, body text, hash text,"
            " PRIMARY KEY (item_id, seq))"
        )
        conn.execute(
            "CREATE TABLE ledger (shard int, n bigint, hash text, prev text, item_id text,"
            " seq int, PRIMARY KEY (shard, n))"
        )
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO items VALUES (%s, 'a', 0, 0, '', %s, 1)",
                [(i, orjson.dumps(item).decode()) for i in ids],
            )
        conn.commit()
        cpu = time.process_time()
        for r in range(1, rounds + 1):
            with conn.pipeline(), conn.cursor() as cur:
                for k, i in enumerate(ids):
                    body = orjson.dumps(event, option=orjson.OPT_SORT_KEYS).decode()
                    digest = hashlib.sha256(body.encode()).hexdigest()
                    cur.execute(
                        "UPDATE items SET state = %s, version = %s, seq = %s, head = %s,"
                        " data = %s WHERE id = %s AND version = %s AND lease_token = %s",
                        ("b", r, r, digest, orjson.dumps(item).decode(), i, r - 1, 1),
                    )
                    cur.execute("INSERT INTO events VALUES (%s, %s, %s, %s)", (i, r, body, digest))
                    cur.execute(
                        "INSERT INTO ledger VALUES (%s, %s, %s, %s, %s, %s)",
                        (k % 16, r * GROUP + k, digest, digest, i, r),
                    )
            conn.commit()
        return 1e6 * (time.process_time() - cpu) / (rounds * GROUP)


def stopline_us(url: str, items: int) -> float:
    """stopline's worker CPU per transition, in process, lockstep at batch 50, 50 ahead."""
    import noop_app
    import stopline_bench
    from common import drain

    from stopline.runtime.worker import Worker
    from stopline.store import open_store

    stopline_bench.prepare(url, items)
    store = open_store(url, migrate=False)
    worker = Worker(store, noop_app.app, concurrency=GROUP, batch=GROUP, lockstep=True, ahead=GROUP)
    cpu = time.process_time()
    drain(worker, store, "completed", items)
    spent = time.process_time() - cpu
    worker.close()
    store.close()
    return 1e6 * spent / (items * stopline_bench.TRANSITIONS_PER_ITEM)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--items", type=int, default=2000, help="stopline's no-op items to drain")
    p.add_argument("--rounds", type=int, default=200, help="groups of 50 decisions to write")
    p.add_argument("--pg-dsn", default=BenchConfig().pg_admin_dsn)
    args = p.parse_args(argv)
    item, event = _documents()
    seal, body = hash_us(item), hash_us(event)
    with temp_database(args.pg_dsn, "floor") as name:
        write = group_write_us(url_for(args.pg_dsn, name), args.rounds)
    with temp_database(args.pg_dsn, "floor") as name:
        ours = stopline_us(url_for(args.pg_dsn, name), args.items)
    print(f"SHA-256 of an item's seal document ({len(orjson.dumps(item))} bytes): {seal:.1f} us")
    print(f"SHA-256 of an event's body ({len(orjson.dumps(event))} bytes): {body:.1f} us")
    print(f"a decision in a group of {GROUP} (three rows, hashed), client CPU: {write:.1f} us")
    print(f"stopline, lockstep at batch {GROUP}, worker CPU per transition: {ours:.1f} us")
    print(f"stopline against the group write alone: {ours / write:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
