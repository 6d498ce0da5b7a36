"""How many examples the slowest property tests draw: the full count in CI (``STOPLINE_SLOW=1``,
which ``.ci/run`` sets) and a quarter of it in a plain ``pytest`` run, so that the everyday run
stays quick while CI keeps the whole search (docs/reliability.md)."""

from __future__ import annotations

import os

SLOW = os.environ.get("STOPLINE_SLOW") == "1"
SHARE = 4  # a plain run draws 1/SHARE of the examples


def examples(full: int, least: int = 10) -> int:
    """``full`` under ``STOPLINE_SLOW=1``; otherwise ``full // SHARE``, at least ``least``."""
    return full if SLOW else max(least, full // SHARE)
