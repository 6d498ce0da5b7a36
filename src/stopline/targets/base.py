"""The target protocol: adapters to the external systems that items deliver to.

Errors form a small tree::

    TargetError                 the target refused or failed; the call did not take effect
    ├── RemoteMissing           the bound remote object does not exist (never recreated)
    ├── VersionConflict         a conditional update/create found another version
    └── OutcomeUnknown          the call may or may not have taken effect (timeout, reset)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..core.artifacts import Artifact, Readback


class TargetError(Exception):
    """The call failed and did not take effect."""


class RemoteMissing(TargetError):
    """The remote object is not there."""


class VersionConflict(TargetError):
    """A conditional write met another version (or an existing object on create)."""


class OutcomeUnknown(TargetError):
    """The call may or may not have taken effect; look the object up before acting again."""


@dataclass(frozen=True)
class RemoteRef:
    remote_id: str
    version: str


@runtime_checkable
class Target(Protocol):
    name: str

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        """Create a new object; the key makes a repeated create find, not duplicate."""
        ...

    def update(self, ref: RemoteRef, artifact: Artifact) -> RemoteRef:
        """Replace the object at ``ref`` only if it is still at ``ref.version``.

        Raises :class:`RemoteMissing` when it no longer exists: an update never recreates.
        """
        ...

    def read(self, remote_id: str) -> Readback:
        """Read the stored object back (raises :class:`RemoteMissing`)."""
        ...

    def find(self, idempotency_key: str) -> RemoteRef | None:
        """The object created with this key, or ``None`` when the target says there is none."""
        ...

    def publish(self, ref: RemoteRef) -> str:
        """Publish the object; returns a publication signal (URL, id). Optional."""
        ...
