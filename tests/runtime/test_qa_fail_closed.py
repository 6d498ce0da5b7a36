"""The QA hook passes an artifact only with a passing ``QAResult``: a hook that answers
anything else, or raises, delivers nothing. On both stores, a real worker in process and a
real directory target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stopline import Artifact, RetryPolicy
from stopline.store import Store
from stopline.targets.directory import DirectoryTarget

from .notice import drained, notice_automation


def _answers_true(ctx: Any, artifact: Artifact) -> Any:
    return True  # truthy, but not a verdict


def _raises(ctx: Any, artifact: Artifact) -> Any:
    raise RuntimeError("the checker is down")


@pytest.mark.parametrize("qa", [_answers_true, _raises], ids=["answers-true", "raises"])
def test_a_qa_hook_without_a_passing_verdict_delivers_nothing(
    store: Store, tmp_path: Path, qa: Any
) -> None:
    out = tmp_path / "out"
    automation = notice_automation(
        DirectoryTarget(out), qa=qa, retry=RetryPolicy(max_attempts=1, base_delay=60.0)
    )
    item = drained(store, automation)
    assert item.state.value not in ("pending_readback", "completed"), item.state
    assert item.state.is_stop, item.state
    assert not out.exists() or not any(out.rglob("*.json"))
    assert not [e for e in store.history(item.id) if e.command in ("bind", "intent")]
