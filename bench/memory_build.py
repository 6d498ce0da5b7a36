"""The databases of the memory scenario (``memory.py``): N stopped items and DUE due ones.

One real item of ``io_app.app_fast`` goes through the real worker to ``ready_for_review`` (the
seed); its item row and event rows are copied by SQL, with new ids and keys and times one
second apart, up to N stopped items. The column lists are read from the database, so a column
added later is copied as it is. The copies carry no ledger rows and their copied hashes do
not verify (``stopline verify`` would report them); nothing the scenario measures checks them.
Then DUE items are discovered for the same automation (``decide`` + ``store.insert``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime

from common import BENCH_DIR

DUE = 200
AUTOMATION = "fast"
APP = "io_app:app_fast"
SEED_KEY = "seed"

# How a copied column differs from the seed's (every other column is copied as it is).
# {x} is the copy's number, {col} the seed's column.
SQLITE_COPY = {
    "id": "printf('itm_%020x', {x})",
    "item_id": "printf('itm_%020x', {x})",
    "key": "'c' || {x}",
    "time": "strftime('%Y-%m-%dT%H:%M:%S', {col}, '-' || {x} || ' seconds') || substr({col}, 20)",
    "detail": 'replace({col}, \'"key":"{seed}"\', \'"key":"c\' || {x} || \'"\')',
    "search_text": "replace({col}, '/{seed} ', '/c' || {x} || ' ')",
}
PG_COPY = {
    "id": "'itm_' || lpad(to_hex({x}), 20, '0')",
    "item_id": "'itm_' || lpad(to_hex({x}), 20, '0')",
    "key": "'c' || {x}",
    "time": "{col} - {x} * interval '1 second'",
    "detail": 'replace({col}::text, \'"key":"{seed}"\', \'"key":"c\' || {x} || \'"\')::json',
    "search_text": "replace({col}, '/{seed} ', '/c' || {x} || ' ')",
}
TIMES = {"created_at", "updated_at", "next_eligible_at", "at", "state_since"}


def env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPLINE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BENCH_DIR), env.get("PYTHONPATH")]))
    return env


def cli(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "stopline.cli.main", *args],
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode != 0:
        raise RuntimeError(f"stopline {args[0]} exited {out.returncode}: {out.stderr.strip()}")
    return out.stdout


def _discover(url: str, prefix: str, n: int) -> list[str]:
    import io_app

    from stopline.core.commands import Discover
    from stopline.core.decide import decide
    from stopline.core.step import Context
    from stopline.runtime.scheduler import Scheduler, new_item_id
    from stopline.store import open_store

    store = open_store(url)
    Scheduler(store, io_app.app_fast).register()
    policy = io_app.app_fast.automations[0].policy
    now = datetime.now(UTC)
    ids = []
    for i in range(n):
        key = prefix if n == 1 else f"{prefix}{i}"
        item_id = new_item_id()
        d = decide(None, Discover(item_id, AUTOMATION, key, {}), Context(now, policy))
        store.insert(d)
        ids.append(item_id)
    store.close()
    return ids


def counts(url: str) -> dict[str, int]:
    from stopline.store import open_store

    store = open_store(url, migrate=False)
    try:
        return {c.state: c.count for c in store.insights.count_by_state()}
    finally:
        store.close()


def _select(columns: list[str], copy: dict[str, str], seed: str) -> str:
    out = []
    for col in columns:
        form = copy["time"] if col in TIMES else copy.get(col)
        out.append(form.format(x="g.x", col=f"t.{col}", seed=seed) if form else f"t.{col}")
    return ", ".join(out)


def _clone_sqlite(path: str, seed_id: str, n: int) -> None:
    import sqlite3

    conn = sqlite3.connect(path)
    with conn:
        for table, where in (("items", "id"), ("events", "item_id")):
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            conn.execute(
                f"INSERT INTO {table} ({', '.join(cols)}) "
                "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < ?) "
                f"SELECT {_select(cols, SQLITE_COPY, SEED_KEY)} FROM g, {table} AS t "
                f"WHERE t.{where} = ?",
                (n, seed_id),
            )
    conn.execute("ANALYZE")
    conn.close()


def _clone_pg(url: str, seed_id: str, n: int) -> None:
    import psycopg

    with psycopg.connect(url) as conn:
        for table, where in (("items", "id"), ("events", "item_id")):
            cols = [
                r[0]
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns"
                    " WHERE table_schema = current_schema() AND table_name = %s"
                    " ORDER BY ordinal_position",
                    (table,),
                )
            ]
            conn.execute(
                f"INSERT INTO {table} ({', '.join(cols)}) "
                f"SELECT {_select(cols, PG_COPY, SEED_KEY)}"
                f" FROM generate_series(1, %s) AS g(x), {table} AS t WHERE t.{where} = %s",
                (n, seed_id),
            )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def build(url: str, backlog: int) -> str:
    """N stopped items (one real seed and N-1 copies) and DUE due ones; returns the seed's id."""
    (seed_id,) = _discover(url, SEED_KEY, 1)
    cli("run", APP, "--once", "--quiet", "--db", url)
    found = counts(url)
    if found.get("ready_for_review") != 1:
        raise RuntimeError(f"the seed did not stop for review: {found}")
    if url.startswith("sqlite:///"):
        _clone_sqlite(url.removeprefix("sqlite:///"), seed_id, backlog - 1)
    else:
        _clone_pg(url, seed_id, backlog - 1)
    _discover(url, "due", DUE)
    found = counts(url)
    if found.get("ready_for_review") != backlog or sum(found.values()) != backlog + DUE:
        raise RuntimeError(f"the store does not hold {backlog} stopped + {DUE} due: {found}")
    return seed_id
