"""The ratios the bench prints under its table, all within one run (the same machine, the
same load): stopline against the raw loop and the peers, and the IO-bound path against its
ideal (C / 50 ms)."""

from __future__ import annotations

from collections.abc import Iterable

from common import Row


def rate_of(rows: Iterable[Row], **match: object) -> float | None:
    for r in rows:
        if all(r.get(k) == v for k, v in match.items()) and r.get("rate") is not None:
            return float(r["rate"])
    return None


def _ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def lines(rows: list[Row], cores: int | None = None) -> list[str]:
    out: list[str] = []
    raw_label = {"sqlite sync=FULL": "sqlite sync=FULL", "sqlite sync=NORMAL": "sqlite sync=NORMAL"}
    stores = sorted({str(r["store"]) for r in rows if str(r["scenario"]).startswith("stopline")})
    workers = sorted({int(r["workers"]) for r in rows if r["scenario"] == "stopline"})
    pgq = rate_of(rows, scenario="pgqueuer", concurrency=10)
    out.append("no-op path, transitions/s against the raw loop's steps/s (same store, workers):")
    for store in stores:
        raw_store = raw_label.get(store, store)
        for w in workers:
            raw = raw_rate(rows, raw_store, w)
            cells = []
            for r in rows:
                name = str(r["scenario"])
                if r["store"] == store and r["workers"] == w and name.startswith("stopline"):
                    batch = r["details"].get("batch", 1)
                    how = "lockstep " if r["details"].get("lockstep") else ""
                    ahead = r["details"].get("ahead")
                    more = f" ahead {ahead}" if ahead else ""
                    cell = f"{how}batch {batch}{more}: {_ratio(r.get('rate'), raw)}"
                    if store == "postgres":
                        cell += f" (vs pgqueuer batched {_ratio(r.get('rate'), pgq)})"
                    cells.append(cell)
            if cells:
                out.append(f"  {store}, {w} worker(s): " + "; ".join(cells))
    io = [r for r in rows if str(r["scenario"]).startswith("io 50ms")]
    if io:
        out.append("IO-bound path (hooks wait 50 ms), items/s against the ideal C / 50 ms:")
        for c in sorted({int(r["concurrency"]) for r in io}):
            cells = []
            peers = {
                str(r["scenario"]).split(": ", 1)[1]: r.get("rate")
                for r in io
                if r["concurrency"] == c and "stopline" not in str(r["scenario"])
            }
            for r in io:
                if r["concurrency"] != c:
                    continue
                ratio = r["details"].get("ideal_ratio")
                name = str(r["scenario"]).split(": ", 1)[1]
                where = f" {r['store']}" if "stopline" in name else ""
                cells.append(f"{name}{where} {'n/a' if ratio is None else f'{ratio:.0%}'}")
            out.append(f"  C={c}: " + "; ".join(cells))
            for r in io:
                if r["concurrency"] == c and "stopline" in str(r["scenario"]):
                    vs = ", ".join(
                        f"{p} {_ratio(r.get('rate'), rate)}" for p, rate in peers.items()
                    )
                    name = str(r["scenario"]).split(": ", 1)[1]
                    out.append(f"    {name} {r['store']} vs {vs}")
    return out + cpu_lines(rows) + budget_lines(rows, cores)


def _raw_row(rows: Iterable[Row], store: str, workers: int) -> Row | None:
    for r in rows:
        if r["scenario"] != "raw" and not str(r["scenario"]).startswith("raw"):
            continue
        details = r.get("details", {})
        if r["workers"] != workers:
            continue
        if store == "postgres" and details.get("pg_outcome") == "cte":
            return r
        if store.startswith("sqlite") and details.get("sqlite_sync") == store.split("=")[1]:
            return r
    return None


def floor_rate(rows: Iterable[Row], store: str, workers: int) -> float | None:
    """The rate of the loop that writes what stopline's guarantees need (floor_loop.py)."""
    return rate_of(rows, scenario="guarantees floor", store=store, workers=workers)


def raw_rate(rows: Iterable[Row], store: str, workers: int) -> float | None:
    r = _raw_row(rows, store, workers)
    return None if r is None or r.get("rate") is None else float(r["rate"])


def cpu_lines(rows: list[Row]) -> list[str]:
    """CPU of the worker processes per transition against the raw loop's per step (the
    database server's own CPU is not counted): unlike a rate, it barely moves with the load
    of the machine, so it shows what a change to the code saves on any day."""
    out: list[str] = []
    for r in rows:
        if r["scenario"] != "stopline" or r.get("error"):
            continue
        cpu = r["details"].get("cpu_ms_per_op")
        if cpu is None:
            continue
        line = f"  {r['store']}, {r['workers']} worker(s): {cpu:.3f} ms per transition"
        raw = _raw_row(rows, str(r["store"]), int(r["workers"]))
        raw_cpu = None if raw is None else raw["details"].get("cpu_ms_per_op")
        if raw_cpu is not None:
            line += f", raw loop {raw_cpu:.3f} ms per step ({_ratio(cpu, raw_cpu)})"
        out.append(line)
    return ["worker CPU, batch 1 (user + system, every thread):", *out] if out else []


def budget_lines(rows: list[Row], cores: int | None) -> list[str]:
    """Where a row measured both the worker's CPU and the database server's (PostgreSQL on this
    machine): their sum per operation, and the most that sum lets ``cores`` cores do per
    second, beside what the row made. A row near its ceiling is bound by CPU, not by waits."""
    out: list[str] = []
    for r in rows:
        details = r.get("details", {})
        cpu, db = details.get("cpu_ms_per_op"), details.get("db_cpu_ms_per_op")
        if r.get("error") or cpu is None or db is None or not cores:
            continue
        unit = {"steps": "step", "items": "item"}.get(str(r["unit"]), str(r["unit"]))
        if str(r["scenario"]).startswith("stopline"):
            unit = "transition"
        name = f"{r['scenario']}, {r['store']}, {r['workers']} worker(s)"
        if r.get("concurrency"):
            name += f", C={r['concurrency']}"
        ceiling = cores * 1000 / (cpu + db)
        rate = r.get("rate")
        made = "" if rate is None else f", made {rate:,.0f} ({rate / ceiling:.0%})"
        out.append(
            f"  {name}: {cpu:.3f} + {db:.3f} = {cpu + db:.3f} ms per {unit}; "
            f"at most {ceiling:,.0f}/s{made}"
        )
    head = (
        f"CPU per operation, worker processes + database server (from /proc), and the most "
        f"that allows on {cores} cores:"
    )
    return [head, *out] if out else []
