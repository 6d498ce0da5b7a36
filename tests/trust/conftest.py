"""Fixtures of the signed-mode tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .agentkit import RunningAgent, start_agent
from .signedlab import SignedLab


@pytest.fixture
def make_lab(store_url: str, tmp_path: Path) -> Callable[..., SignedLab]:
    """``make_lab(approvals=2, item_keys=("k1",))``: a signed lab on a fresh database of each
    kind: alice and bob (approver, operator), carol (operator) and dana (viewer) certified by
    the root; each pay item awaiting approval, proposed by a real worker process."""

    def make(approvals: int = 2, item_keys: tuple[str, ...] = ("k1",)) -> SignedLab:
        made = SignedLab(tmp_path, store_url, approvals, item_keys)
        made.certify_people()
        made.work()
        for key in item_keys:
            assert made.item(key).state.value == "awaiting_approval"
        return made

    return make


@pytest.fixture
def lab(make_lab: Callable[..., SignedLab]) -> SignedLab:
    """A signed lab with one pay item, k1, awaiting two approvals."""
    return make_lab()


@pytest.fixture
def ssh_agent() -> Iterator[RunningAgent]:
    """A real ssh-agent (``ssh-agent -D -a SOCK``) of this test alone, stopped afterwards."""
    agent = start_agent()
    try:
        yield agent
    finally:
        agent.stop()
