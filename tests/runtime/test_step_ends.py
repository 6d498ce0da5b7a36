"""A step that ends early ends there: once it has committed what ended it (an execute hook's
own outcome, a read back that failed), it writes nothing more, not even a command the core
would refuse. Each case leaves its one decision and an empty refusal audit. On both stores,
a real worker in process and a real directory target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stopline import NeedsEyes, RetryLater, RetryPolicy
from stopline.store import Store
from stopline.targets.base import Readback, TargetError
from stopline.targets.directory import DirectoryTarget

from .notice import drained, notice_automation


@pytest.mark.parametrize(
    ("outcome", "state", "command"),
    [(RetryLater("the API asked us to wait"), "delivering", "retry"),
     (NeedsEyes(owner="operators", why="the change window is closed"), "exception", "needs_eyes")],
    ids=["retry-later", "needs-eyes"],
)  # fmt: skip
def test_an_execute_hook_outcome_ends_the_step(
    store: Store, tmp_path: Path, outcome: Any, state: str, command: str
) -> None:
    out = tmp_path / "out"
    automation = notice_automation(
        DirectoryTarget(out),
        execute=lambda ctx: outcome,
        retry=RetryPolicy(max_attempts=3, base_delay=60.0),
    )
    item = drained(store, automation)
    assert item.state.value == state
    assert store.history(item.id)[-1].command == command
    assert store.insights.refusal_counts() == []
    assert not out.exists() or not any(out.rglob("*.json"))


class UnreadableTarget(DirectoryTarget):
    """Creates as a directory target does; every read back fails (the server answers 503)."""

    def read(self, remote_id: str) -> Readback:
        raise TargetError("the server answered 503")


def test_a_failed_read_back_ends_the_step(store: Store, tmp_path: Path) -> None:
    """The object is written; reading it back fails: the failure is recorded (retried later,
    the item left in ``pending_readback``) and no read back is committed after it."""
    automation = notice_automation(
        UnreadableTarget(tmp_path / "out"), retry=RetryPolicy(max_attempts=3, base_delay=60.0)
    )
    item = drained(store, automation)
    assert item.state.value == "pending_readback"
    history = store.history(item.id)
    assert history[-1].command == "retry"
    assert "readback" not in [e.command for e in history]
    assert store.insights.refusal_counts() == []
