"""A target call runs within the automation's ``hook_timeout``, as its hooks do.

A target is code the automation brings (a directory, a WebDAV server, or a class of its own),
and a call of it had no time limit: a create that never returned held the worker, its lease
renewed all the while. Now a call past its time is recorded ``outcome_unknown`` (it may yet
take effect): the next attempt looks for the object by its idempotency key before it creates
anything, and a create that lands late finds the object there, so there is one object. On
both stores, a real worker in process and a real directory target.
"""

from __future__ import annotations

import threading
from pathlib import Path

from stopline import Artifact, RetryPolicy
from stopline.core.failures import OUTCOME_UNKNOWN
from stopline.runtime.remote_calls import exact
from stopline.store import Store
from stopline.targets.base import RemoteRef
from stopline.targets.directory import DirectoryTarget

from .notice import drained, notice_automation

HOLD = 60.0


class Holding(DirectoryTarget):
    """A directory target whose first create waits for ``release`` before it creates."""

    def __init__(self, root: Path, release: threading.Event) -> None:
        super().__init__(root)
        self.release = release
        self.creates = 0
        self.late = threading.Event()  # the held create has returned

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        self.creates += 1
        if self.creates > 1:
            return super().create(artifact, idempotency_key)
        self.release.wait(HOLD)
        try:
            return super().create(artifact, idempotency_key)
        finally:
            self.late.set()


def test_a_create_past_its_time_is_outcome_unknown_and_makes_one_object(
    store: Store, tmp_path: Path, release: threading.Event
) -> None:
    root = tmp_path / "out"
    target = Holding(root, release)
    automation = notice_automation(
        target, hook_timeout=0.5, retry=RetryPolicy(max_attempts=3, base_delay=0.0)
    )
    item = drained(store, automation)
    assert item.state.value == "completed", item.state
    assert [e["class"] for e in item.attempt_log][:1] == [OUTCOME_UNKNOWN], item.attempt_log
    assert target.creates == 2
    release.set()  # the held create goes on now, with the same idempotency key
    assert target.late.wait(60)
    objects = [p for p in root.iterdir() if not p.name.startswith(".")]
    assert len(objects) == 1, objects


def test_a_targets_answer_is_read_as_exact_values() -> None:
    class Text(str):
        def __str__(self) -> str:
            return "something else"

    ref = exact(RemoteRef(Text("id-1"), Text("v1")))
    assert ref == RemoteRef("id-1", "v1")
    assert type(ref.remote_id) is str and type(ref.version) is str
