"""Slow reliability runs are marked ``slow``: skipped by default, run when STOPLINE_SLOW=1
(``.ci/run`` sets it) or when selected explicitly with ``-m slow``. When they run, they run
first: pytest-xdist hands out tests in collection order, and a two-minute lab that starts
last keeps the whole run waiting on one process while the others have nothing left to do."""

from __future__ import annotations

import compileall
import os
from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Compile the package and the tests' helpers once, in the process that runs (or hands
    out) the tests. Every ``stopline`` process a test starts imports them, and where
    PYTHONDONTWRITEBYTECODE is set (as on this project's machines) nothing else writes their
    bytecode: each of those thousands of processes compiled every module it imports again,
    about a third of the CPU time of a short command."""
    if hasattr(config, "workerinput"):
        return  # a pytest-xdist worker: the controller has compiled them
    root = Path(__file__).resolve().parent
    for folder in ("src", "tests"):
        compileall.compile_dir(root / folder, quiet=2, workers=1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("STOPLINE_SLOW") == "1" or "slow" in (config.getoption("-m") or ""):
        items.sort(key=lambda item: "slow" not in item.keywords)  # stable: the rest keep order
        return
    skip = pytest.mark.skip(reason="slow reliability run: set STOPLINE_SLOW=1 (CI does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
