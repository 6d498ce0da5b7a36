"""The throughput targets, judged on the rows of one run (the same machine, the same load).

- the no-op path on PostgreSQL, four workers, the best batching mode: at or above pgqueuer's
  batched default and the raw loop with its outcome as one statement (beside it, the
  guarantees' floor with its outcomes committed in groups of 50, and stopline against it);
- one step at a time: at least 70 % of the raw loop on SQLite FULL and PostgreSQL, with one
  worker and with four; beside it, what the loop that writes what the guarantees need
  (``floor_loop.py``) made against the raw loop, and stopline against that floor;
- the IO-bound path: at least 90 % of the ideal C / 50 ms at every concurrency, and ahead of
  every peer at the same concurrency (the best of stopline's modes at each C).

A target whose rows this run did not make (``--only``, other worker counts) is left out.
"""

from __future__ import annotations

from collections.abc import Iterable

from common import Row
from ratios import floor_rate, rate_of, raw_rate

ONE_AT_A_TIME = 0.70
IDEAL = 0.90


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _stopline(rows: Iterable[Row], store: str, workers: int) -> list[Row]:
    return [
        r
        for r in rows
        if str(r["scenario"]).startswith("stopline")
        and r["store"] == store
        and r["workers"] == workers
        and r.get("rate") is not None
    ]


def lines(rows: list[Row]) -> list[str]:
    out: list[str] = []
    grouped = [r for r in _stopline(rows, "postgres", 4) if r["details"].get("batch", 1) > 1]
    raw, pgq = raw_rate(rows, "postgres", 4), rate_of(rows, scenario="pgqueuer", concurrency=10)
    if grouped and raw and pgq:
        best = max(grouped, key=lambda r: float(r["rate"]))
        rate = float(best["rate"])
        floor = rate_of(rows, scenario="guarantees floor batch 50", store="postgres", workers=4)
        beside = ""
        if floor:
            beside = (
                f"; the guarantees' floor at batch 50 {floor / raw:.2f}x the raw loop, "
                f"stopline {rate / floor:.2f}x of it"
            )
        out.append(
            f"  PostgreSQL, 4 workers, best batching ({best['scenario']}): {rate / raw:.2f}x the "
            f"raw loop, {rate / pgq:.2f}x pgqueuer batched (1.00x each): "
            f"{_verdict(rate >= raw and rate >= pgq)}{beside}"
        )
    for store in ("sqlite sync=FULL", "postgres"):
        for w in (1, 4):
            one = [r for r in _stopline(rows, store, w) if r["scenario"] == "stopline"]
            raw = raw_rate(rows, store, w)
            if one and raw:
                ratio = float(one[0]["rate"]) / raw
                floor = floor_rate(rows, store, w)
                beside = ""
                if floor:
                    beside = f"; the guarantees' floor {floor / raw:.2f}x, stopline {ratio * raw / floor:.2f}x of it"
                    if floor / raw < ONE_AT_A_TIME:
                        beside += ", the target is above the floor"
                out.append(
                    f"  one step at a time, {store}, {w} worker(s): {ratio:.2f}x the raw loop "
                    f"({ONE_AT_A_TIME:.2f}x): {_verdict(ratio >= ONE_AT_A_TIME)}{beside}"
                )
    io = [r for r in rows if str(r["scenario"]).startswith("io 50ms") and r.get("rate")]
    for c in sorted({int(r["concurrency"]) for r in io}):
        ours = [r for r in io if r["concurrency"] == c and "stopline" in str(r["scenario"])]
        peers = [r for r in io if r["concurrency"] == c and "stopline" not in str(r["scenario"])]
        if not ours:
            continue
        best = max(ours, key=lambda r: float(r["rate"]))
        ratio = float(best["details"].get("ideal_ratio") or 0.0)
        ahead = all(float(best["rate"]) > float(p["rate"]) for p in peers)
        top = max(peers, key=lambda r: float(r["rate"]), default=None)
        peer = ""
        if top is not None:
            name = str(top["scenario"]).split(": ", 1)[1]
            peer = f", best peer {name} {float(top['details'].get('ideal_ratio') or 0):.0%}"
        out.append(
            f"  IO-bound, C={c}: best {str(best['scenario']).split(': ', 1)[1]} {best['store']} "
            f"{ratio:.0%} of the ideal ({IDEAL:.0%}){peer}: {_verdict(ratio >= IDEAL and ahead)}"
        )
    return ["targets, within this run:", *out] if out else []
