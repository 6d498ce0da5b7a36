"""The QA hook passes an artifact only with a passing ``QAResult``: a hook that answers
anything else, or raises, delivers nothing. On both stores, a real worker in process and a
real directory target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stopline import Artifact, RetryPolicy, TransientError
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


@pytest.mark.parametrize(
    ("error", "state", "outcome"),
    [(TransientError("the checker is busy"), "delivering", "retry"),
     (RuntimeError("the checker is down"), "exception", "stopped")],
    ids=["transient", "raised"],
)  # fmt: skip
def test_a_qa_hook_that_raised_is_recorded_as_its_own_failure(
    store: Store, tmp_path: Path, error: Exception, state: str, outcome: str
) -> None:
    """Not a failed verdict: the step's failure, under the class the hook raised, which the
    retry policy then judges (a transient error is retried later, anything else stops for a
    person), with nothing staged and nothing delivered."""

    def qa(ctx: Any, artifact: Artifact) -> Any:
        raise error

    out = tmp_path / "out"
    automation = notice_automation(
        DirectoryTarget(out), qa=qa, retry=RetryPolicy(max_attempts=3, base_delay=60.0)
    )
    item = drained(store, automation)
    assert item.state.value == state
    logged = item.attempt_log[-1]
    assert (logged["class"], logged["outcome"]) == (type(error).__name__, outcome)
    assert str(error) in logged["message"]
    commands = [e.command for e in store.history(item.id)]
    assert "stage" not in commands and "bind" not in commands
    assert not out.exists() or not any(out.rglob("*.json"))
