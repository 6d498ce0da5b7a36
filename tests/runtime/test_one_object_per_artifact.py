"""Every artifact is bound to an object of its own: a delivery whose target answered one
remote identity for two artifacts does not complete.

A target that keeps objects by content (or any that answers an object it already holds) bound
both of two artifacts with the same content to one remote object. Both read back as written,
the delivery completed, and a later revision of the one rewrote the other's object while its
record still said it was read back as delivered. Then the readback stopped the item for a
person (``shared_with``, still the core's rule for records bound so); now the second artifact
is not bound at all: the object is held by the first (``remote_object_held``, see
``test_remote_holds.py`` for two items). On both stores, a real worker in process and a real
directory target.
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
    assert ids["en"] and ids["fr"] is None  # the first bound, the second stopped before
    assert item.state.value == "exception", item.state
    assert item.doc("review_packet") is None
    detail = str(store.history(item.id)[-1].detail)
    assert "remote_object_held" in detail and "this item's artifact 'en'" in detail
