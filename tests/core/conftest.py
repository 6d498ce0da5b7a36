"""Fixtures of the core tests: a fresh harness (item, clock, policy, actors) per test."""

from __future__ import annotations

import pytest

from .helpers import Harness


@pytest.fixture
def h() -> Harness:
    """An empty harness at T0 with the default test policy and actor registry."""
    return Harness()
