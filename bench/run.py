"""Benchmark entry point: raw lease loops and peer job queues, in one run, one table.

    bench/setup.sh                                   # once: bench/.venv with the peers
    bench/.venv/bin/python bench/run.py              # defaults, ~3-5 min on 2 cores
    bench/.venv/bin/python bench/run.py --quick      # ~1 min, smaller sizes, no claim cost
    bench/.venv/bin/python bench/run.py --claim-cost --json out.json
    bench/.venv/bin/python bench/run.py --only none --claim-cost --memory   # just those two
    bench/.venv/bin/python bench/run.py --only none --guard-cost   # the check before acting

Results are printed as a table and written to ``bench/results/<timestamp>.json`` (and to
``--json PATH`` if given), with machine information.

Adding a scenario (e.g. stopline itself): write ``rows(cfg: BenchConfig) -> Iterator[Row]``
that yields ``common.make_row(...)`` dicts, and register it in ``GENERATORS`` below. Rows
use ``unit="steps"`` for lease-loop steps (two commits each) and ``unit="jobs"`` for
drained jobs, so a stopline row can sit next to either kind.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import claim_cost
import guard_cost
import io_bench
import memory
import peers
import ratios
import raw
import stopline_bench
import stopline_claim_cost
import verdicts
from common import RESULTS_DIR, BenchConfig, Row, pg_info

RowGenerator = Callable[[BenchConfig], Iterable[Row]]

# name -> row generator, run in this order. A stopline generator goes here, e.g.
#   "stopline": stopline_bench.rows,
GENERATORS: dict[str, RowGenerator] = {
    "stopline": stopline_bench.rows,
    "raw": raw.rows,
    "peers": peers.rows,
    "io": io_bench.rows,
    "io-peers": peers.io_rows,
}


# --------------------------------------------------------------------------- machine info


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _fs_type(path: Path) -> str:
    """Filesystem type of the mount holding ``path`` (SQLite files live there)."""
    try:
        best, fstype = "", "unknown"
        target = str(path.resolve())
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            mnt = parts[1]
            if (target == mnt or target.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(best):
                best, fstype = mnt, parts[2]
        return fstype
    except OSError:
        return "unknown"


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout.strip() or None
    except Exception:
        return None


def _pkg(name: str) -> str | None:
    try:
        return version(name)
    except Exception:
        return None


def machine_info(cfg: BenchConfig) -> dict[str, Any]:
    cfg.tmp_dir.mkdir(parents=True, exist_ok=True)
    return {
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": _cpu_model(),
        "mem_total": _mem_total(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "sqlite_version": sqlite3.sqlite_version,
        "sqlite_settings": {
            "journal_mode": "WAL",
            "synchronous_variants": list(cfg.sqlite_syncs),
            "busy_timeout_ms": raw.BUSY_TIMEOUT_MS,
            "transactions": "BEGIN IMMEDIATE",
            "data_dir_fs": _fs_type(cfg.tmp_dir),
        },
        "postgres": pg_info(cfg.pg_admin_dsn),
        "packages": {
            n: _pkg(n)
            for n in ("stopline", "psycopg", "procrastinate", "pgqueuer", "asyncpg", "dbos")
        },
        "git_commit": _git_commit(),
    }


# --------------------------------------------------------------------------- output


def _fmt_rate(row: Row) -> str:
    if row.get("error") and row.get("rate") is None:
        return "n/a"
    rate = row["rate"]
    return f"{rate:,.0f} {row['unit']}/s" + (" (!)" if row.get("error") else "")


def format_table(rows: list[Row]) -> str:
    headers = [
        "scenario",
        "store",
        "workers",
        "conc",
        "items",
        "ops",
        "rate",
        "seconds",
        "vs ideal",
        "row B/tr",
        "CPU ms/op",
        "DB CPU ms/op",
    ]
    body = [
        [
            str(r["scenario"]),
            str(r["store"]),
            str(r["workers"]),
            "-" if r.get("concurrency") is None else str(r["concurrency"]),
            str(r["items"]),
            f"{r['ops']} {r['unit']}",
            _fmt_rate(r),
            "-" if r.get("seconds") is None else f"{r['seconds']:.2f}",
            _detail(r, "ideal_ratio", "{:.0%}"),
            _detail(r, "row_bytes_per_transition", "{:,.0f}"),
            _detail(r, "cpu_ms_per_op", "{:.3f}"),
            _detail(r, "db_cpu_ms_per_op", "{:.3f}"),
        ]
        for r in rows
    ]
    return _grid(headers, body, right={2, 3, 4, 5, 6, 7, 8, 9, 10, 11})


def _detail(row: Row, key: str, form: str) -> str:
    value = row.get("details", {}).get(key)
    return "-" if value is None else form.format(value)


def format_claim_table(rows: list[dict[str, Any]]) -> str:
    headers = ["scenario", "store", "backlog", "due", "samples", "median ms", "p95 ms"]
    body = [
        [
            r["scenario"],
            r["store"],
            f"{r['backlog']:,}",
            str(r["due"]),
            str(r["samples"]),
            "n/a" if r.get("error") else f"{r['median_ms']:.3f}",
            "n/a" if r.get("error") else f"{r['p95_ms']:.3f}",
        ]
        for r in rows
    ]
    return _grid(headers, body, right={2, 3, 4, 5, 6})


def _grid(headers: list[str], body: list[list[str]], right: set[int]) -> str:
    widths = [max(len(h), *(len(row[i]) for row in body)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)
        ).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(row) for row in body)
    return "\n".join(out)


def format_memory_table(rows: list[dict[str, Any]]) -> str:
    headers, body, right = memory.table_rows(rows)
    return _grid(headers, body, right=right)


def _errors(rows: Iterable[dict[str, Any]]) -> list[str]:
    return [
        f"  {r['scenario']} / {r['store']} / conc={r.get('concurrency')}: {r['error']}"
        for r in rows
        if r.get("error")
    ]


# --------------------------------------------------------------------------- main


def _progress(rows: Iterable[dict[str, Any]], t_start: float) -> Iterator[dict[str, Any]]:
    for r in rows:
        what = r.get("rate") if "rate" in r else r.get("median_ms", r.get("peak_rss_mb"))
        print(
            f"[{time.monotonic() - t_start:6.1f}s] {r['scenario']:<28} {r['store']:<24} "
            f"w={r.get('workers', '-')} c={r.get('concurrency', '-')} -> "
            f"{what if not r.get('error') else 'ERROR ' + str(r['error'])}",
            file=sys.stderr,
            flush=True,
        )
        yield r


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes (~1 min), no claim cost")
    p.add_argument("--json", type=Path, help="also write the JSON result here")
    p.add_argument("--claim-cost", action="store_true", help="measure claim latency vs backlog")
    p.add_argument(
        "--guard-cost",
        action="store_true",
        help="the check before acting with 0, 100 and 1,000 actors (~1 min; also with --quick)",
    )
    p.add_argument(
        "--memory",
        action="store_true",
        help="peak RSS of a worker and of serve with 10^3 and 10^5 stopped items (~5 min;\n"
        "also with --quick, at the same sizes)",
    )
    p.add_argument(
        "--only",
        default=",".join(GENERATORS),
        help=f"comma-separated generators to run (default: {','.join(GENERATORS)});\n"
        "none: only --claim-cost, --guard-cost and --memory",
    )
    p.add_argument("--items", type=int, help="raw loop: items (each needs --steps steps)")
    p.add_argument("--steps", type=int, help="raw loop: steps per item")
    p.add_argument("--jobs", type=int, help="peers: jobs to drain")
    p.add_argument("--workers", help="raw loop: comma-separated worker counts, e.g. 1,2,4")
    p.add_argument("--timeout", type=float, help="the longest one scenario may run (seconds)")
    p.add_argument("--batches", help="stopline: comma-separated batch sizes, e.g. 1,10,50")
    p.add_argument("--io-items", type=int, help="IO-bound path: items at concurrency 10 and 50")
    p.add_argument("--pg-dsn", help="admin DSN (key=value) of the PostgreSQL server")
    return p.parse_args(argv)


def build_config(args: argparse.Namespace) -> BenchConfig:
    cfg = BenchConfig.quick_config() if args.quick else BenchConfig()
    if args.items:
        cfg.items = args.items
    if args.steps:
        cfg.steps_per_item = args.steps
    if args.jobs:
        cfg.jobs = args.jobs
    if args.workers:
        cfg.workers = tuple(int(w) for w in args.workers.split(","))
    if args.timeout:
        cfg.scenario_timeout = args.timeout
    if args.batches:
        cfg.batches = tuple(int(b) for b in args.batches.split(","))
    if args.io_items:
        cfg.io_items = args.io_items
    if args.pg_dsn:
        cfg.pg_admin_dsn = args.pg_dsn
    cfg.claim_cost = bool(args.claim_cost and not args.quick)
    cfg.memory = bool(args.memory)
    return cfg


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = build_config(args)
    if args.claim_cost and args.quick:
        print("note: --claim-cost is off with --quick", file=sys.stderr)
    selected = [n.strip() for n in args.only.split(",") if n.strip() not in ("", "none")]
    unknown = [n for n in selected if n not in GENERATORS]
    if unknown:
        print(f"unknown generator(s): {', '.join(unknown)}", file=sys.stderr)
        return 2

    started = datetime.now(UTC)
    t_start = time.monotonic()
    info = machine_info(cfg)
    rows: list[Row] = []
    for name in selected:
        rows.extend(_progress(GENERATORS[name](cfg), t_start))
    claims: list[dict[str, Any]] = []
    if cfg.claim_cost:
        claims += _progress(stopline_claim_cost.rows(cfg), t_start)
        claims += _progress(claim_cost.rows(cfg), t_start)
    guards: list[dict[str, Any]] = []
    if args.guard_cost:
        guards += _progress(guard_cost.rows(cfg), t_start)
    mem: list[dict[str, Any]] = []
    if cfg.memory:
        mem += _progress(memory.rows(cfg), t_start)
    duration = time.monotonic() - t_start

    result = {
        "started_at": started.isoformat(timespec="seconds"),
        "duration_seconds": round(duration, 1),
        "argv": sys.argv[1:] if argv is None else argv,
        "config": {
            k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(cfg).items()
        },
        "machine": info,
        "rows": rows,
        "claim_cost": claims,
        "guard_cost": guards,
        "memory": mem,
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"{started.strftime('%Y%m%dT%H%M%SZ')}{'-quick' if cfg.quick else ''}.json"
    text = json.dumps(result, indent=2, default=str) + "\n"
    out.write_text(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text)

    pg = info["postgres"]
    print(
        f"\nstopline bench - {info['nproc']} CPUs ({info['cpu_model']}), Python {info['python']}, "
        f"SQLite {info['sqlite_version']} (WAL, data on {info['sqlite_settings']['data_dir_fs']}), "
        f"PostgreSQL {pg.get('server_version', '?')} "
        f"(synchronous_commit={pg.get('synchronous_commit', '?')}, fsync={pg.get('fsync', '?')})"
    )
    if rows:
        print(
            f"raw: {cfg.items} items x {cfg.steps_per_item} steps (2 commits each); "
            f"peers: {cfg.jobs} no-op jobs, 1 worker process; {duration:.0f}s total"
        )
    print(f"{duration:.0f}s total\n" if not rows else "")
    if rows:
        print(format_table(rows))
        print()
        print("\n".join(ratios.lines(rows, info["usable_cpus"])))
        print("\n".join(verdicts.lines(rows)))
    if claims:
        print()
        print(format_claim_table(claims))
    if guards:
        print()
        headers, body, right = guard_cost.table_rows(guards)
        print(_grid(headers, body, right=right))
        print()
        print("\n".join(guard_cost.ratio_lines(guards)))
    if mem:
        print()
        print(format_memory_table(mem))
        print()
        print("\n".join(memory.ratio_lines(mem)))
        print("\n".join(memory.read_lines(mem)))
    errors = _errors([*rows, *claims, *guards, *mem])
    if errors:
        print("\nerrors:")
        print("\n".join(errors))
    print(f"\nJSON: {out}" + (f" and {args.json}" if args.json else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
