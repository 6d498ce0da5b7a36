"""An exception a target raises that stopline does not know (no target error class) is not
taken for a passing outage: it stops the item for a person under its own class name, and the
write is not retried. On both stores, a real worker in process and a real directory target."""

from __future__ import annotations

from pathlib import Path

from stopline import Artifact, RetryPolicy
from stopline.store import Store
from stopline.targets.base import RemoteRef
from stopline.targets.directory import DirectoryTarget

from .notice import drained, notice_automation


class Broken(DirectoryTarget):
    """A target whose create fails with an error of its own (a bug, not an outage)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.creates = 0

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        self.creates += 1
        raise KeyError("remote_id")


def test_an_unknown_target_error_stops_the_item_for_a_person(store: Store, tmp_path: Path) -> None:
    target = Broken(tmp_path / "out")
    automation = notice_automation(target, retry=RetryPolicy(max_attempts=5, base_delay=0.0))
    item = drained(store, automation)
    assert item.state.value == "exception", item.state
    assert target.creates == 1
    assert "KeyError" in str(store.history(item.id)[-1].detail)
