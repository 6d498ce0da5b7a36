"""Targets that misbehave on purpose, wrapped around a real one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from stopline.core.artifacts import Artifact, Readback
from stopline.targets.base import OutcomeUnknown, RemoteRef, Target, TargetError


class Proxy:
    """Passes every call on to ``inner``."""

    def __init__(self, inner: Target) -> None:
        self.inner = inner
        self.name = inner.name

    def describe(self) -> dict[str, Any]:
        return dict(getattr(self.inner, "describe")())  # noqa: B009

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        return self.inner.create(artifact, idempotency_key)

    def update(self, ref: RemoteRef, artifact: Artifact) -> RemoteRef:
        return self.inner.update(ref, artifact)

    def read(self, remote_id: str) -> Readback:
        return self.inner.read(remote_id)

    def find(self, idempotency_key: str) -> RemoteRef | None:
        return self.inner.find(idempotency_key)

    def publish(self, ref: RemoteRef) -> str:
        return self.inner.publish(ref)


class Tampering(Proxy):
    """Stores something other than what it was sent (a changed body) on ``ops``."""

    def __init__(self, inner: Target, ops: tuple[str, ...] = ("update",)) -> None:
        super().__init__(inner)
        self.ops = ops

    @staticmethod
    def _edit(artifact: Artifact) -> Artifact:
        return replace(artifact, body=artifact.body + "\n[edited by the target]")

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        if "create" in self.ops:
            artifact = self._edit(artifact)
        return self.inner.create(artifact, idempotency_key)

    def update(self, ref: RemoteRef, artifact: Artifact) -> RemoteRef:
        if "update" in self.ops:
            artifact = self._edit(artifact)
        return self.inner.update(ref, artifact)


class LostReply(Proxy):
    """The first create of ``key_suffix`` has an unknown outcome: performed (``lands``) or not,
    then :class:`OutcomeUnknown` is raised, as after a timeout or a reset connection."""

    def __init__(self, inner: Target, key_suffix: str = ":article-1", *, lands: bool) -> None:
        super().__init__(inner)
        self.key_suffix = key_suffix
        self.lands = lands
        self.tripped = False

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        if not self.tripped and idempotency_key.endswith(self.key_suffix):
            self.tripped = True
            if self.lands:
                self.inner.create(artifact, idempotency_key)
            raise OutcomeUnknown(f"no reply to the create of {idempotency_key}")
        return self.inner.create(artifact, idempotency_key)


class SwapsIdentity(Tampering):
    """Stores something else on update and answers another object's identity; past ``most``
    updates it refuses (so that a driver that kept going would stop)."""

    def __init__(self, inner: Target, most: int = 3) -> None:
        super().__init__(inner)
        self.most = most
        self.updates = 0

    def update(self, ref: RemoteRef, artifact: Artifact) -> RemoteRef:
        self.updates += 1
        if self.updates > self.most:
            raise TargetError(f"update {self.updates}: refused by the test")
        done = super().update(ref, artifact)
        return RemoteRef("someone-else", done.version)
