"""A target's answer of the wrong kind stops the item for a person; it never escapes the step.

A create, update or find answers a ``RemoteRef`` (a find may answer ``None``) and a read a
``Readback`` whose assets are fingerprints (name, media type, SHA-256). An answer of another
kind (a bare id, ``None`` from a read, an object that only looks like a reference, an asset
without a name) raised in the worker after the call, outside the target's time: the worker's
loop ended and the item kept its claim, to end the next worker's loop the same way. Now it is
the target's failure, recorded under its class like any error of its own. On both stores, a
real worker in process and a real directory target.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stopline import Artifact, RetryPolicy
from stopline.core.artifacts import Readback
from stopline.store import Store
from stopline.targets.base import RemoteRef
from stopline.targets.directory import DirectoryTarget

from .notice import drained, notice_automation


class LooksLikeARef:
    """Not a ``RemoteRef``: its attributes are the target's code, run whenever they are read."""

    def __init__(self, ref: RemoteRef) -> None:
        self.ref = ref

    @property
    def remote_id(self) -> str:
        raise RuntimeError("read after the call returned")

    @property
    def version(self) -> str:
        return self.ref.version


class BareId(DirectoryTarget):
    def create(self, artifact: Artifact, idempotency_key: str) -> Any:
        return super().create(artifact, idempotency_key).remote_id


class LookAlike(DirectoryTarget):
    def create(self, artifact: Artifact, idempotency_key: str) -> Any:
        return LooksLikeARef(super().create(artifact, idempotency_key))


class ReadsNothing(DirectoryTarget):
    def read(self, remote_id: str) -> Any:
        return None


class NamelessAsset(DirectoryTarget):
    def read(self, remote_id: str) -> Readback:
        back = super().read(remote_id)
        asset = {"media_type": "text/plain", "sha256": "0" * 64}
        return Readback(back.remote_id, back.version, back.title, back.summary, back.body, (asset,))


@pytest.mark.parametrize("kind", [BareId, LookAlike, ReadsNothing, NamelessAsset])
def test_an_answer_of_the_wrong_kind_stops_the_item_for_a_person(
    store: Store, tmp_path: Path, kind: type[DirectoryTarget]
) -> None:
    target = kind(tmp_path / "out")
    automation = notice_automation(target, retry=RetryPolicy(max_attempts=5, base_delay=0.0))
    item = drained(store, automation)  # the worker's loop goes on: nothing escapes the step
    assert item.state.value == "exception", item.state
    assert item.lease_owner is None
    assert "TypeError" in str(store.history(item.id)[-1].detail)


class AnswersId(DirectoryTarget):
    """Creates the object, then answers ``remote_id`` for it (an id no record may hold)."""

    remote_id = ""

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        made = super().create(artifact, idempotency_key)
        return RemoteRef(self.remote_id, made.version)


@pytest.mark.parametrize(
    "remote_id",
    ["", "a\x00b", "line\nbreak", "x" * 2049, "\ud800"],
    ids=["empty", "nul", "newline", "too-long", "lone-surrogate"],
)
def test_an_id_no_record_may_hold_stops_the_item_at_once(
    store: Store, tmp_path: Path, remote_id: str
) -> None:
    """Before, the bind was refused and nothing recorded: the item went round by expired
    leases until its attempts were spent. A longer id than any path was stored as given."""
    target = AnswersId(tmp_path / "out")
    target.remote_id = remote_id
    automation = notice_automation(target, retry=RetryPolicy(max_attempts=5, base_delay=0.0))
    item = drained(store, automation)
    assert item.state.value == "exception", item.state
    assert item.attempts == 1  # stopped by the first answer, not by spent attempts
    assert "id or version" in str(store.history(item.id)[-1].detail)
