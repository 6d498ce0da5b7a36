"""Fixtures of the store's tests."""

from __future__ import annotations

from typing import Any

import pytest

from stopline.store import actors as actors_module


@pytest.fixture
def folds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the registry's chain was folded (one entry per fold)."""
    calls: list[int] = []
    real = actors_module.fold

    def counting(events: Any) -> Any:
        calls.append(len(events))
        return real(events)

    monkeypatch.setattr(actors_module, "fold", counting)
    return calls
