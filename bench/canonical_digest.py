"""Microseconds per digest: the legacy canonical form next to RFC 8785, for value shapes the
core hashes (event bodies above all: every transition hashes one).

    .venv/bin/python bench/canonical_digest.py [--number N]

Prints one row per shape: the legacy fast and exact digests, then the RFC 8785 fast and exact
ones. The best of five runs is shown, so a busy machine inflates the numbers less.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from stopline.core.canonical import (
    FrozenDict,
    digest,
    fast_digest,
)
from stopline.core.legacy_form import (
    legacy_digest,
    legacy_fast_digest,
)

AT = datetime(2026, 11, 29, 21, 39, 20, 123456, tzinfo=UTC)
HASH = "9f2c" * 16


def event(detail: dict[str, Any]) -> dict[str, Any]:
    """An event body as ``Event.body()`` builds it."""
    return {
        "item_id": "01JD3Q8W6X0A9B8C7D6E5F4G3H",
        "seq": 7,
        "at": AT,
        "command": "approve",
        "actor": "alice",
        "from_state": "awaiting_approval",
        "to_state": "approved",
        "reasons": [],
        "digests": FrozenDict({"proposal": HASH, "evidence": HASH}),
        "detail": FrozenDict(detail),
        "prev_hash": HASH,
    }


SHAPES: dict[str, Any] = {
    "event, small": event({}),
    "event, approval": event(
        {
            "approval": FrozenDict(
                {"actor": "alice", "role": "ops", "policy_version": "0123456789abcdef", "at": AT}
            ),
            "params": FrozenDict({"amount": 12, "to": "k1", "ratio": 0.25}),
        }
    ),
    "event, float 1.0 (refit)": event({"params": FrozenDict({"ratio": 1.0})}),
    "event, non-ASCII": event({"note": "café — 東京 ✓", "emoji": "🚦"}),
    "proposal, 40 params": {
        "action": "refund",
        "target": "acct-1",
        "params": {f"p{i}": (i, f"value {i}", i / 7) for i in range(40)},
        "evidence": [{"digest": HASH, "observed_at": AT}],
    },
}

FUNCTIONS: list[tuple[str, Callable[[Any], str]]] = [
    ("legacy fast", legacy_fast_digest),
    ("legacy", legacy_digest),
    ("8785 fast", fast_digest),
    ("8785", digest),
]


def per_call(fn: Callable[[Any], str], value: Any, number: int) -> float:
    """Best of five runs, in microseconds per call."""
    return min(timeit.repeat(lambda: fn(value), number=number, repeat=5)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=2000, help="calls per run")
    args = parser.parse_args()
    header = f"{'shape':<26}" + "".join(f"{name:>13}" for name, _ in FUNCTIONS)
    print(header + f"{'fast/legacy':>13}")
    for shape, value in SHAPES.items():
        assert fast_digest(value) == digest(value)
        times = [per_call(fn, value, args.number) for _, fn in FUNCTIONS]
        row = f"{shape:<26}" + "".join(f"{t:>11.1f}µs" for t in times)
        print(row + f"{times[2] / times[0]:>12.2f}x")


if __name__ == "__main__":
    main()
