"""``stopline workers``: the worker processes on this database, from their heartbeats, and the
notification endpoints that were disabled (``--enable URL`` sends to one again)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import Store


def add_workers_command(add: Callable[..., argparse.ArgumentParser]) -> None:
    p = add(
        "workers",
        cmd_workers,
        "live and stale worker processes (from their heartbeats) and disabled endpoints",
    )
    p.add_argument(
        "--enable", metavar="URL", help="send notifications to this disabled endpoint again"
    )


def workers_doc(store: Store, now: datetime) -> dict[str, Any]:
    from ..runtime.heartbeat import LIVE_AFTER

    beats = [b.to_plain(now) for b in store.heartbeats.workers()]
    for b in beats:  # a worker whose clock is off claims nothing: alive, not live
        b["live"] = b["age_seconds"] <= LIVE_AFTER and not b["clock_off"]
    disabled = [
        {"url": d.url, "disabled_at": d.disabled_at.isoformat(), "reason": d.reason}
        for d in store.outbox.disabled_endpoints()
    ]
    return {
        "live": sum(1 for b in beats if b["live"]),
        "workers": beats,
        "disabled_endpoints": disabled,
    }


def cmd_workers(args: argparse.Namespace, store: Store, out: Any) -> int:
    if args.enable:
        enabled = store.outbox.enable_endpoint(args.enable)
        out.doc(
            {"enabled": enabled, "url": args.enable},
            f"enabled {args.enable}" if enabled else f"{args.enable} was not disabled",
        )
        return 0
    doc = workers_doc(store, datetime.now(UTC))
    lines = [f"{doc['live']} live worker(s)"]
    for b in doc["workers"]:
        status = "CLOCK" if b["clock_off"] else "live" if b["live"] else "STALE"
        lines.append(
            f"  {status:5} {b['worker']}  seen {b['age_seconds']:.0f}s ago  steps {b['steps']}"
            f"  ({', '.join(b['automations'])})"
        )
        if b["clock_off"]:
            lines.append(
                f"        its clock is {b['clock_skew_seconds']:+.0f} s from the database"
                " server's: it claims nothing until they agree"
            )
    for d in doc["disabled_endpoints"]:
        lines.append(f"DISABLED endpoint {d['url']} since {d['disabled_at']}: {d['reason']}")
    out.doc(doc, "\n".join(lines))
    return 0
