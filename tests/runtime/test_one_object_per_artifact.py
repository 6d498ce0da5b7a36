"""Every artifact is read back from an object of its own: a delivery whose target answered one
remote identity for two artifacts does not complete.

A target that keeps objects by content (or any that answers an object it already holds) bound
both of two artifacts with the same content to one remote object. Both read back as written,
the delivery completed, and a later revision of the one rewrote the other's object while its
record still said it was read back as delivered. Now the readback stops the item for a person.
On both stores, a real worker in process and a real directory target.
"""

from __future__ import annotations

from pathlib import Path

from stopline import Artifact, Deliver, RetryPolicy
from stopline.store import Store
from stopline.targets.base import RemoteRef
from stopline.targets.directory import DirectoryTarget

from .notice import drained, notice_automation


class ByContent(DirectoryTarget):
    """A create of content the target holds already answers the object holding it."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.held: dict[str, RemoteRef] = {}

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        if artifact.content_hash not in self.held:
            self.held[artifact.content_hash] = super().create(artifact, idempotency_key)
        return self.held[artifact.content_hash]


def notice(key: str) -> Artifact:
    return Artifact(key, "Outage", "API down", "We are on it.")


def test_two_artifacts_bound_to_one_object_stop_the_item(store: Store, tmp_path: Path) -> None:
    target = ByContent(tmp_path / "out")
    automation = notice_automation(
        target,
        execute=lambda ctx: Deliver([notice("en"), notice("fr")]),
        retry=RetryPolicy(max_attempts=3, base_delay=0.0),
    )
    item = drained(store, automation)
    ids = {a["key"]: a["remote_id"] for a in item.doc("artifacts")}
    assert ids["en"] == ids["fr"]  # what the target answered
    assert item.state.value == "exception", item.state
    assert item.doc("review_packet") is None
    last = store.history(item.id)[-1]
    assert "readback_mismatch" in last.reasons
    assert "shared_with" in str(last.detail)
