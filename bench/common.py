"""Shared helpers for the benchmark: config, rows, PostgreSQL databases, subprocesses.

A *row generator* is a function ``rows(cfg: BenchConfig) -> Iterator[Row]``. Every scenario
(raw loops, peers, and later stopline itself) yields rows built with :func:`make_row`, so
``run.py`` can print and store them uniformly.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue as queue_mod
import re
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
TMP_DIR = BENCH_DIR / ".tmp"

Row = dict[str, Any]


@dataclass
class BenchConfig:
    """Sizes and targets shared by every row generator."""

    quick: bool = False
    # raw lease loop: N items, each needing K steps (K committed state changes).
    items: int = 2500
    steps_per_item: int = 4
    workers: tuple[int, ...] = (1, 2, 4)
    sqlite_syncs: tuple[str, ...] = ("FULL", "NORMAL")
    # peers: N no-op jobs to drain.
    jobs: int = 3000
    # hard limit for one scenario run in a subprocess (seconds)
    scenario_timeout: float = 180.0
    pg_admin_dsn: str = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
    tmp_dir: Path = TMP_DIR
    claim_cost: bool = False
    claim_backlogs: tuple[int, ...] = (10**3, 10**5, 10**6)
    claim_samples: int = 500
    # peak RSS of a worker and of `serve` with this many stopped items (bench/memory.py)
    memory: bool = False
    memory_backlogs: tuple[int, ...] = (10**3, 10**5)
    # the no-op path through stopline at these batch sizes (claims and commits in groups)
    batches: tuple[int, ...] = (1, 10, 50)
    # the IO-bound path: items per run (fewer at concurrency 1, where each waits in turn)
    io_items: int = 2000
    io_items_serial: int = 200
    # free-form options for generators added later (e.g. a stopline scenario)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def quick_config(cls) -> BenchConfig:
        return cls(
            quick=True,
            items=500,
            workers=(1, 2, 4),
            jobs=600,
            scenario_timeout=90.0,
            claim_samples=100,
            io_items=500,
            io_items_serial=60,
        )


def make_row(
    *,
    scenario: str,
    store: str,
    workers: int,
    items: int,
    ops: int,
    unit: str,
    seconds: float | None,
    concurrency: int | None = None,
    error: str | None = None,
    **details: Any,
) -> Row:
    """One result row. ``unit`` is "steps" (lease-loop steps) or "jobs" (drained jobs)."""
    rate = ops / seconds if (seconds and error is None) else None
    return {
        "scenario": scenario,
        "store": store,
        "workers": workers,
        "concurrency": concurrency,
        "items": items,
        "ops": ops,
        "unit": unit,
        "seconds": round(seconds, 4) if seconds is not None else None,
        "rate": round(rate, 1) if rate is not None else None,
        "error": error,
        "details": details,
    }


# --------------------------------------------------------------------------- PostgreSQL


def dsn_for(admin_dsn: str, dbname: str) -> str:
    """Replace the dbname in a key=value DSN."""
    parts = [p for p in admin_dsn.split() if not p.startswith("dbname=")]
    return " ".join([*parts, f"dbname={dbname}"])


def url_for(admin_dsn: str, dbname: str, driver: str = "postgresql") -> str:
    """A URL (for libraries that want one) pointing at ``dbname`` on the admin DSN's server."""
    kv = dict(p.split("=", 1) for p in admin_dsn.split())
    user = kv.get("user", "postgres")
    pw = kv.get("password")
    auth = f"{user}:{pw}" if pw else user
    return f"{driver}://{auth}@{kv.get('host', '127.0.0.1')}:{kv.get('port', '5432')}/{dbname}"


_counter = 0


def unique_db_name(prefix: str) -> str:
    global _counter
    _counter += 1
    safe = re.sub(r"[^a-z0-9_]", "_", prefix.lower())
    return f"bench_{safe}_{os.getpid()}_{_counter}_{int(time.time() * 1000) % 100000}"


def create_database(admin_dsn: str, name: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_database(admin_dsn: str, name: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@contextlib.contextmanager
def temp_database(admin_dsn: str, prefix: str) -> Iterator[str]:
    """Create a fresh database, yield its name, drop it afterwards (even on error)."""
    name = unique_db_name(prefix)
    create_database(admin_dsn, name)
    try:
        yield name
    finally:
        drop_database(admin_dsn, name)


def pg_info(admin_dsn: str) -> dict[str, Any]:
    try:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            out: dict[str, Any] = {}
            for key in (
                "server_version",
                "synchronous_commit",
                "fsync",
                "wal_sync_method",
                "shared_buffers",
                "max_connections",
            ):
                out[key] = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(key))).fetchone()[
                    0
                ]
            return out
    except Exception as exc:  # pragma: no cover - reported, not fatal
        return {"error": repr(exc)}


# --------------------------------------------------------------------------- SQLite files


@contextlib.contextmanager
def temp_sqlite_dir(cfg: BenchConfig, prefix: str) -> Iterator[Path]:
    """A scratch folder on the real disk (not tmpfs), so fsync costs what it costs."""
    cfg.tmp_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{prefix}_", dir=cfg.tmp_dir) as d:
        yield Path(d)


# --------------------------------------------------------------------------- subprocesses


def _child(target: Callable[..., Any], args: tuple[Any, ...], out: mp.Queue[Any]) -> None:
    try:
        out.put(("ok", target(*args)))
    except BaseException as exc:
        out.put(("error", f"{type(exc).__name__}: {exc}", traceback.format_exc()))


def run_isolated(target: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> Any:
    """Run ``target(*args)`` in a fresh spawned interpreter and return its (picklable) result.

    Raises ``RuntimeError`` with the child's error, or ``TimeoutError``.
    """
    ctx = mp.get_context("spawn")
    out: mp.Queue[Any] = ctx.Queue()
    proc = ctx.Process(target=_child, args=(target, args, out), daemon=True)
    proc.start()
    try:
        msg = out.get(timeout=timeout)
    except queue_mod.Empty:
        proc.kill()
        proc.join(5)
        raise TimeoutError(f"scenario did not finish within {timeout:.0f}s") from None
    proc.join(30)
    if proc.is_alive():
        proc.kill()
        proc.join(5)
    if msg[0] == "error":
        raise RuntimeError(msg[1] + "\n" + msg[2])
    return msg[1]


def short_error(exc: BaseException) -> str:
    """First line of an error, for the table; the full text goes into the JSON."""
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:160]


def completed(store: Any, state: str) -> int:
    """How many items are in ``state`` (one aggregate: an idle worker waiting for the others
    to finish reads a count, not every item)."""
    return sum(int(r["count"]) for r in store.count_by_state() if r["state"] == state)


def drain(worker: Any, store: Any, state: str, n: int) -> None:
    """Tick ``worker`` until ``n`` items are in ``state`` (every worker's share of a drain
    done), pausing a millisecond whenever it found nothing to do."""
    while True:
        if worker.tick():
            continue
        if completed(store, state) >= n:
            return
        time.sleep(0.001)


def _postgres_processes() -> dict[str, tuple[str, list[int]]] | None:
    """pid -> (state, [utime, stime, cutime, cstime]) of every process named ``postgres``."""
    found: dict[str, tuple[str, list[int]]] = {}
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # ended meanwhile
            continue
        name, _, rest = stat.partition("(")[2].rpartition(")")
        if name == "postgres":
            fields = rest.split()
            found[pid] = (fields[0], [int(f) for f in fields[11:15]])
    return found


def database_cpu() -> float | None:
    """CPU seconds (user + system) the PostgreSQL server on this machine has used so far: its
    processes' own, plus what its postmaster collected of the backends that ended. ``None``
    when no such process is visible (a server elsewhere, no ``/proc``). A difference of two
    readings is the server's CPU between them, its background processes included.

    A backend that ends moves its time into its parent's total when it is reaped; a reading
    taken across that moment would count it twice or not at all. So a reading is taken only
    when no backend is waiting to be reaped and a second look finds the same processes with
    the same totals of ended children (nothing was reaped while the first was read)."""
    for _ in range(100):
        first = _postgres_processes()
        if not first:
            return None
        second = _postgres_processes() or {}
        zombies = any(state == "Z" for state, _ in first.values())
        children = {pid: t[2:] for pid, (_, t) in first.items()}
        if not zombies and children == {pid: t[2:] for pid, (_, t) in second.items()}:
            return sum(sum(t) for _, t in first.values()) / os.sysconf("SC_CLK_TCK")
        time.sleep(0.02)
    return None


def per_op_ms(before: float | None, after: float | None, ops: int) -> float | None:
    """Milliseconds of database CPU per operation between two :func:`database_cpu` readings."""
    if before is None or after is None or ops <= 0:
        return None
    return round(1000 * (after - before) / ops, 3)
