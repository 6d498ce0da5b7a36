"""Memory: the peak RSS of a worker and of ``stopline serve`` with 10^3 and 10^5 stopped items.

Target: the worker's memory is flat (within 10 %) from 10^3 to 10^5 stopped items; the server's
is reported the same way. For each backlog and store (SQLite FULL file, PostgreSQL database):

1. (``memory_build``) one real item of ``io_app.app_fast`` (observe returns at once, propose reports for review)
   goes through the real worker (``stopline run io_app:app_fast --once``) to
   ``ready_for_review``: the seed;
2. the seed's item row and its event rows are copied by SQL, with new ids and keys and times
   one second apart, up to N stopped items (the copies carry no ledger rows and their copied
   hashes do not verify: ``stopline verify`` would report them; no read measured here checks);
3. ``DUE`` new items are discovered for the same automation (``decide`` + ``store.insert``);
4. **worker**: ``stopline run io_app:app_fast --once`` drains them in a subprocess; its peak
   RSS is ``ru_maxrss`` from ``os.wait4`` (in a small launcher: see ``LAUNCHER``), with its
   ``VmHWM``, ``RssAnon`` and ``RssFile`` sampled every 20 ms beside it; every due item must
   have reached ``ready_for_review``;
5. **serve**: ``stopline serve`` answers, ``ROUNDS`` times, the inbox's first page, a search,
   the inbox's second page (its keyset link), ``/stuck``, ``/metrics``, ``/api/items`` and the
   seed's item page; its peak RSS is ``VmHWM`` from ``/proc/PID/status``.
"""

from __future__ import annotations

import html
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import BenchConfig, temp_database, temp_sqlite_dir, url_for
from memory_build import APP, DUE, build, cli, counts, env

ROUNDS = 3
STORES = ("sqlite sync=FULL", "postgres")
TARGET = 1.10  # 10^5 / 10^3 peak RSS, at most


# --------------------------------------------------------------------------- measuring


def _status_mb(pid: int, peaks: dict[str, float]) -> dict[str, float]:
    """Raise ``peaks`` to the process's VmHWM, RssAnon and RssFile (MB) now; a process that
    has just exited leaves them as they are."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return peaks
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "RssAnon", "RssFile") and value.strip():
            peaks[key] = max(peaks.get(key, 0.0), int(value.split()[0]) / 1024)
    return peaks


# Linux carries a process's RSS high-water mark across exec into ru_maxrss, and a child of this
# process starts as a copy of it: wait4 on a worker started from here would report this
# process's own RSS (about 70 MB once it has built 10^5 items) whenever that is the larger.
# So a small launcher (a bare interpreter, about 10 MB) starts the worker and reports its
# ru_maxrss from os.wait4.
LAUNCHER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
print(child.pid, flush=True)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, flush=True)
"""


def worker_rss(url: str, backlog: int, timeout: float) -> tuple[float, float, dict[str, float]]:
    """Peak RSS (MB) of ``stopline run --once`` draining the due items, its seconds, and the
    peaks of its VmHWM, anonymous and file-backed RSS as sampled every 20 ms."""
    worker = [sys.executable, "-m", "stopline.cli.main", "run", APP, "--once", "--quiet"]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, *worker, "--db", url],
            env=env(),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        assert proc.stdout is not None
        t0 = time.monotonic()
        pid = int(proc.stdout.readline())
        peaks: dict[str, float] = {}
        while proc.poll() is None:
            _status_mb(pid, peaks)
            if time.monotonic() - t0 > timeout:
                os.kill(pid, signal.SIGKILL)
                proc.wait()
                raise TimeoutError(f"the worker did not finish within {timeout:.0f}s")
            time.sleep(0.02)
        seconds = time.monotonic() - t0
        code, maxrss = (int(v) for v in proc.stdout.read().split())
        err.seek(0)
        if code != 0:
            raise RuntimeError(f"the worker exited {code}: {err.read().decode().strip()[:300]}")
    found = counts(url)
    if found.get("ready_for_review") != backlog + DUE:
        raise RuntimeError(f"the due items did not all stop for review: {found}")
    return maxrss / 1024, seconds, peaks  # ru_maxrss is in KiB on Linux


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


NEXT = re.compile(r'href="([^"]+)" data-testid="page-next"')
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


READS = ("inbox", "search", "inbox page 2", "stuck", "metrics", "api items", "item page")


def _requests(base: str, token: str, seed_id: str) -> tuple[int, dict[str, float]]:
    """ROUNDS rounds of the reads an operator makes; every answer must be a 200. Returns how
    many were made and, per read, the median time to its answer (ms)."""
    import httpx

    with httpx.Client(base_url=base, timeout=120) as web:
        page = web.get("/signin")
        found = CSRF.search(page.text)
        if not found:
            raise RuntimeError("no CSRF token on /signin")
        signed = web.post("/signin", data={"csrf": found.group(1), "token": token})
        if signed.status_code != 303:
            raise RuntimeError(f"sign-in answered {signed.status_code}")
        api = {"Authorization": f"Bearer {token}"}
        count = 0
        times: dict[str, list[float]] = {name: [] for name in READS}
        for _ in range(ROUNDS):
            first = web.get("/inbox")
            link = NEXT.search(first.text)
            if first.status_code != 200 or not link:
                raise RuntimeError(f"/inbox answered {first.status_code} without a next page")
            answers = [
                first,
                web.get("/inbox", params={"q": "c7"}),
                web.get(html.unescape(link.group(1))),
                web.get("/stuck"),
                web.get("/metrics", headers=api),
                web.get("/api/items", headers=api),
                web.get(f"/items/{seed_id}"),
            ]
            for name, a in zip(READS, answers, strict=True):
                if a.status_code != 200:
                    raise RuntimeError(f"{a.request.url.path} answered {a.status_code}")
                times[name].append(a.elapsed.total_seconds() * 1000)
            count += len(answers)
    return count, {name: round(statistics.median(ms), 1) for name, ms in times.items()}


def serve_rss(
    url: str, seed_id: str, folder: Path
) -> tuple[dict[str, float], int, dict[str, float]]:
    """``stopline serve``'s VmHWM, RssAnon and RssFile (MB) after the reads, how many were
    made, and the median time of each (ms)."""
    cli("actors", "add", "bench", "--role", "operator", "--db", url)
    token = json.loads(cli("actors", "token", "bench", "--json", "--db", url))["token"]
    port = _free_port()
    log = folder / f"serve-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "stopline.cli.main", "serve", "--db", url, "--port", str(port)],
            env=env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        import httpx

        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited {proc.returncode}: {log.read_text()[-300:]}")
            try:
                if httpx.get(f"{base}/openapi.json", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("serve did not answer within 90s")
            time.sleep(0.1)
        made, times = _requests(base, token, seed_id)
        return _status_mb(proc.pid, {}), made, times
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# --------------------------------------------------------------------------- rows


def _row(process: str, store: str, backlog: int) -> dict[str, Any]:
    return {
        "scenario": f"memory: {process}",
        "store": store,
        "stopped": backlog,
        "due": DUE,
        "peak_rss_mb": None,
        "error": None,
    }


def _parts(peaks: dict[str, float]) -> dict[str, float | None]:
    return {
        "vmhwm_mb": round(peaks["VmHWM"], 1) if "VmHWM" in peaks else None,
        "anon_mb": round(peaks["RssAnon"], 1) if "RssAnon" in peaks else None,
        "file_mb": round(peaks["RssFile"], 1) if "RssFile" in peaks else None,
    }


def _measure(cfg: BenchConfig, store: str, url: str, backlog: int, folder: Path) -> Iterator[Any]:
    worker, serve = _row("worker", store, backlog), _row("serve", store, backlog)
    try:
        t0 = time.monotonic()
        seed_id = build(url, backlog)
        worker["build_seconds"] = serve["build_seconds"] = round(time.monotonic() - t0, 1)
    except Exception as exc:
        worker["error"] = serve["error"] = f"build: {type(exc).__name__}: {exc}"[:300]
        yield worker
        yield serve
        return
    try:
        rss, seconds, peaks = worker_rss(url, backlog, cfg.scenario_timeout)
        worker.update(peak_rss_mb=round(rss, 1), seconds=round(seconds, 2), **_parts(peaks))
    except Exception as exc:
        worker["error"] = f"{type(exc).__name__}: {exc}"[:300]
    yield worker
    try:
        peaks, made, times = serve_rss(url, seed_id, folder)
        serve.update(
            peak_rss_mb=round(peaks["VmHWM"], 1), requests=made, read_ms=times, **_parts(peaks)
        )
    except Exception as exc:
        serve["error"] = f"{type(exc).__name__}: {exc}"[:300]
    yield serve


def rows(cfg: BenchConfig) -> Iterator[dict[str, Any]]:
    for backlog in cfg.memory_backlogs:
        with temp_sqlite_dir(cfg, "memory") as folder:
            url = f"sqlite:///{folder / 'memory.db'}"
            yield from _measure(cfg, STORES[0], url, backlog, folder)
        with temp_database(cfg.pg_admin_dsn, "memory") as name, temp_sqlite_dir(cfg, "mem") as d:
            yield from _measure(cfg, STORES[1], url_for(cfg.pg_admin_dsn, name), backlog, d)


# --------------------------------------------------------------------------- output


def _power(n: int) -> str:
    exp = len(str(n)) - 1
    return f"10^{exp}" if n == 10**exp else f"{n:,}"


def table_rows(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]], set[int]]:
    headers = ["scenario", "store", "stopped items", "due", "peak RSS MB", "anon MB", "file MB"]
    body = [
        [
            r["scenario"],
            r["store"],
            f"{r['stopped']:,}",
            str(r["due"]),
            "n/a" if r["peak_rss_mb"] is None else f"{r['peak_rss_mb']:.1f}",
            "-" if r.get("anon_mb") is None else f"{r['anon_mb']:.1f}",
            "-" if r.get("file_mb") is None else f"{r['file_mb']:.1f}",
        ]
        for r in sorted(
            rows, key=lambda r: (r["scenario"] != "memory: worker", r["store"] != STORES[0])
        )
    ]
    return headers, body, {2, 3, 4, 5, 6}


def read_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Per store and backlog: the median time of each of ``serve``'s reads (ms)."""
    out = []
    for r in rows:
        if r["scenario"] == "memory: serve" and r.get("read_ms"):
            times = ", ".join(f"{name} {ms:,.0f}" for name, ms in r["read_ms"].items())
            out.append(f"serve, {r['store']}, {_power(r['stopped'])} stopped, ms: {times}")
    return out


def ratio_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Per process and store: peak RSS at the largest backlog / at the smallest."""
    out = []
    groups: dict[tuple[str, str], dict[int, float | None]] = {}
    for r in rows:
        groups.setdefault((r["scenario"], r["store"]), {})[r["stopped"]] = r["peak_rss_mb"]
    for (scenario, store), by in groups.items():
        lo, hi = min(by), max(by)
        if lo == hi:
            continue
        head = f"{scenario}, {store}: {_power(hi)} ÷ {_power(lo)} = "
        a, b = by[hi], by[lo]
        if a is None or b is None:
            out.append(head + "n/a")
            continue
        ratio = a / b
        verdict = "flat" if ratio <= TARGET else "NOT flat"
        out.append(f"{head}{ratio:.2f} ({verdict}; target ≤ {TARGET:.2f})")
    return out
