"""An automation whose execute hook renders artifacts but that names no target to deliver
them to: the item stops for the operators before anything is staged, and is not retried. On
both stores, a real worker in process."""

from __future__ import annotations

from stopline import RetryPolicy
from stopline.store import Store

from .notice import drained, notice_automation


def test_artifacts_with_no_target_stop_the_item_for_the_operators(store: Store) -> None:
    automation = notice_automation(None, retry=RetryPolicy(max_attempts=5, base_delay=0.0))  # type: ignore[arg-type]
    item = drained(store, automation)
    assert item.state.value == "exception", item.state
    last = store.history(item.id)[-1]
    assert "artifacts but no target" in str(last.detail), last.detail
    assert not [e for e in store.history(item.id) if e.command in ("stage", "intent", "bind")]
    assert item.attempts == 1
