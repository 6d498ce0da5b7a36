"""Slow reliability runs are marked ``slow``: skipped by default, run when STOPLINE_SLOW=1
(``.ci/run`` sets it) or when selected explicitly with ``-m slow``. When they run, they run
first: pytest-xdist hands out tests in collection order, and a two-minute lab that starts
last keeps the whole run waiting on one process while the others have nothing left to do."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("STOPLINE_SLOW") == "1" or "slow" in (config.getoption("-m") or ""):
        items.sort(key=lambda item: "slow" not in item.keywords)  # stable: the rest keep order
        return
    skip = pytest.mark.skip(reason="slow reliability run: set STOPLINE_SLOW=1 (CI does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
