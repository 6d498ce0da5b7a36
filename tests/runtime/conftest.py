"""Fixtures of the runtime reliability tests (the kit itself is in ``labkit.py``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .labkit import Lab, lab_module


@pytest.fixture
def make_lab(tmp_path: Path, lab_mode: dict[str, str]) -> Iterator[Callable[..., Lab]]:
    """``make_lab(**env)``: a lab whose processes all get ``STOPLINE_TEST_<NAME>=value`` (and
    the worker settings of ``lab_mode``)."""
    labs: list[Lab] = []

    def make(**env: Any) -> Lab:
        root = tmp_path / f"lab{len(labs)}"
        root.mkdir()
        made = Lab(
            root, {**lab_mode, **{f"STOPLINE_TEST_{k.upper()}": str(v) for k, v in env.items()}}
        )
        lab_module.init_effects(str(made.effects_path))
        labs.append(made)
        return made

    try:
        yield make
    finally:
        for made in labs:
            made.cleanup()


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """What a test's hook, target or receiver that holds on waits for: set at the test's end,
    so that every one still holding on goes, and its thread ends."""
    event = threading.Event()
    yield event
    event.set()
