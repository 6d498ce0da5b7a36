"""Instructions per transition, counted by callgrind: the same on a quiet machine and a busy one.

A run of the whole bench moves by up to a third from one run to the next on a shared machine,
so a change of a few percent in a transition's CPU cannot be read from it. This script counts
instead: one worker, in process, drains N no-op items (``noop_app.py``, five transitions each)
from a SQLite file under ``valgrind --tool=callgrind``, and the instructions are counted from
its first claim to its last completion (``callgrind_control -i on/off``; the imports, the
store's creation and the items' discovery are not counted). With ``--base REV`` the same runs
are made on REV, checked out in a temporary git worktree, and the two are printed side by
side.

    bench/.venv/bin/python bench/instructions.py --base HEAD~1
    bench/.venv/bin/python bench/instructions.py --modes one --items 40

Modes: ``lockstep`` (batch 50, 50 items claimed ahead, ``--lockstep``), ``batch`` (batch 50 on
step threads) and ``one`` (one step at a time, a quarter of the items). What a worker does by
the clock (lease renewals, heartbeats, polls of an idle loop) is counted too, and valgrind
runs the program some fifty times slower, so two runs of the same code differ by a little
(by 0.06 % in lockstep, the one pair measured when this script was written). Needs valgrind (Debian's package). Writes
``bench/results/<UTC time>-instructions.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
CHECKOUT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
TRANSITIONS_PER_ITEM = 5

# mode -> (batch, lockstep, ahead, share of --items)
MODES: dict[str, tuple[int, bool, int, float]] = {
    "lockstep": (50, True, 50, 1.0),
    "batch": (50, False, 0, 1.0),
    "one": (1, False, 0, 0.25),
}


def child(mode: str, items: int) -> None:
    """Drain ``items`` no-op items in this process, counted between the two toggles."""
    sys.path.insert(0, str(BENCH_DIR))
    import noop_app
    import stopline_bench
    from common import drain

    from stopline.runtime.worker import Worker
    from stopline.store import open_store

    batch, lockstep, ahead, _ = MODES[mode]
    with tempfile.TemporaryDirectory(prefix="instructions_") as folder:
        url = f"sqlite:///{folder}/bench.db"
        stopline_bench.prepare(url, items)
        store = open_store(url, migrate=False)
        worker = Worker(
            store, noop_app.app, concurrency=batch, batch=batch, lockstep=lockstep, ahead=ahead
        )
        _toggle("on")
        drain(worker, store, "completed", items)
        _toggle("off")
        worker.close()
        store.close()
    print(f"completed {items}", flush=True)


def _toggle(state: str) -> None:
    subprocess.run(
        ["callgrind_control", "-i", state, str(os.getpid())], capture_output=True, check=False
    )


def count(src: Path, mode: str, items: int) -> int:
    """The instructions of one drain of ``items`` items with the code of ``src``."""
    with tempfile.TemporaryDirectory(prefix="callgrind_") as folder:
        out = Path(folder) / "callgrind.out"
        env = {**os.environ, "PYTHONPATH": str(src)}
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={out}",
                sys.executable,
                str(Path(__file__).resolve()),
                "--child",
                mode,
                str(items),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if f"completed {items}" not in done.stdout:
            raise RuntimeError(f"the drain of {mode} did not complete:\n{done.stderr[-2000:]}")
        # "summary" counts from the start, where counting was off; "totals" is what was counted
        found = re.search(r"^totals: (\d+)", out.read_text(), re.MULTILINE)
        if found is None or int(found.group(1)) == 0:
            raise RuntimeError(f"no instructions counted in {out} (callgrind_control failed?)")
        return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--base", help="a git revision to count beside this checkout")
    p.add_argument("--items", type=int, default=200, help="items per drain (mode one: a quarter)")
    p.add_argument("--modes", default=",".join(MODES), help=f"of {', '.join(MODES)}")
    p.add_argument("--child", nargs=2, metavar=("MODE", "ITEMS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        p.error(f"unknown mode(s) {', '.join(unknown) or '(none)'}; known: {', '.join(MODES)}")
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    sides = {"this checkout": CHECKOUT / "src"}
    worktree = None
    if args.base:
        worktree = Path(tempfile.mkdtemp(prefix="instructions_base_"))
        subprocess.run(
            [
                "git",
                "-C",
                str(CHECKOUT),
                "worktree",
                "add",
                "--detach",
                "-q",
                str(worktree),
                args.base,
            ],
            check=True,
        )
        sides[args.base] = worktree / "src"
    rows: list[dict[str, Any]] = []
    try:
        for mode in modes:
            items = max(1, round(args.items * MODES[mode][3]))
            transitions = items * TRANSITIONS_PER_ITEM
            row: dict[str, Any] = {"mode": mode, "items": items, "transitions": transitions}
            for side, src in sides.items():
                total = count(src, mode, items)
                row[side] = {"instructions": total, "per_transition": total / transitions}
                print(f"{mode:<9} {side:<16} {total / transitions:>12,.0f} per transition")
            rows.append(row)
    finally:
        if worktree is not None:
            subprocess.run(
                ["git", "-C", str(CHECKOUT), "worktree", "remove", "--force", str(worktree)],
                check=False,
            )
    print()
    print("instructions per transition (callgrind), this checkout against the base:")
    for row in rows:
        head = row["this checkout"]["per_transition"]
        line = f"  {row['mode']:<9} {head:>12,.0f}"
        if args.base:
            base = row[args.base]["per_transition"]
            line += f"   {args.base}: {base:>12,.0f}   ratio {head / base:.3f}"
        print(line)
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS_DIR / f"{stamp}-instructions.json"
    result = {"started_at": stamp, "argv": sys.argv[1:], "base": args.base, "rows": rows}
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"JSON: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
