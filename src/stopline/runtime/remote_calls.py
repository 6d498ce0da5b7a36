"""One call of a target, as the delivery driver makes it: within the automation's time limit,
its answer checked to be of the kind the call names and copied to exact types, and whatever it
raised classed once as a failure (:data:`REMOTE_FAILURES`); and the hold an item takes on a
remote object before it binds it (``store/remote_holds.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.artifact_records import remote_text_problem
from ..core.artifacts import Readback
from ..core.failures import (
    OUTCOME_UNKNOWN,
    REMOTE_IDENTITY_MISSING,
    REMOTE_OBJECT_HELD,
    REMOTE_VERSION_CONFLICT,
    TARGET_UNAVAILABLE,
)
from ..targets.base import (
    OutcomeUnknown,
    RemoteMissing,
    RemoteRef,
    Target,
    TargetError,
    VersionConflict,
)
from .hooks import HookTimeout, class_name, describe
from .outcomes import TransientError
from .target_names import target_name

if TYPE_CHECKING:
    from .step import Step

T = TypeVar("T")

# The one mapping from what a target raises to the failure recorded, the first match winning.
# The same in a delivery and a revision; what differs (a revision fails where a delivery
# retries or stops) is decided in the core. Anything else a target raises is recorded under
# its own class name, which stops the item for a person.
REMOTE_FAILURES: tuple[tuple[type[Exception], str], ...] = (
    (OutcomeUnknown, OUTCOME_UNKNOWN),
    (RemoteMissing, REMOTE_IDENTITY_MISSING),
    (VersionConflict, REMOTE_VERSION_CONFLICT),
    (TargetError, TARGET_UNAVAILABLE),
    (TransientError, TARGET_UNAVAILABLE),
)


# What each target call answers: a create, an update and a find a reference (a find ``None``
# when there is none), a read a read-back whose assets are fingerprints.
Answer = type | tuple[type, ...]
FOUND = (RemoteRef, type(None))
FINGERPRINT = frozenset({"name", "media_type", "sha256"})


class RemoteFailed(Exception):
    """A target call failed; ``failure_class`` is what it records."""

    def __init__(self, failure_class: str, message: str) -> None:
        super().__init__(message)
        self.failure_class = failure_class
        self.message = message


def remote(step: Step, call: Callable[..., T], *args: Any, answers: Answer) -> T:
    """Make one target call within the automation's ``hook_timeout`` (a target is code the
    automation brings, as its hooks are); whatever it raises, or an answer not of the kind
    ``answers`` names, becomes :class:`RemoteFailed`, and a call past its time is
    ``outcome_unknown``: it may yet take effect, so the next attempt looks for the object by
    its idempotency key before it creates anything."""
    limit = step.automation.hook_timeout
    try:
        result, error = step.worker.hook_runner().run(_answered(call, answers), args, limit)
    except HookTimeout:
        name = getattr(call, "__name__", "call")
        why = f"the target's {name} did not answer within {limit:g} s; it may yet take effect"
        raise RemoteFailed(OUTCOME_UNKNOWN, why) from None
    if type(error) is RemoteFailed:  # its type, not its __class__: the target's code
        raise error
    if error is not None:  # SystemExit and the like: the target's failure, by its class
        raise RemoteFailed(class_name(error), describe(error)) from error
    return result  # type: ignore[no-any-return]


def _answered(call: Callable[..., T], answers: Answer) -> Callable[..., T]:
    """``call``, with what it raised described and what it returned checked and copied within
    its time (the target's own ``__str__`` and attributes are its code)."""

    def answered(*args: Any) -> T:
        try:
            return exact(call(*args), answers)
        except Exception as error:
            kind = next((c for t, c in REMOTE_FAILURES if isinstance(error, t)), None)
            raise RemoteFailed(kind or type(error).__name__, describe(error)) from error

    return answered


def exact(value: T, answers: Answer | None = None) -> T:
    """A target's answer as the exact types the driver reads (a reference, a read-back, a
    publication signal); anything else as it is. With ``answers``, an answer of another kind
    (or a read-back asset that is not a fingerprint) raises ``TypeError``."""
    if answers is not None and not isinstance(value, answers):
        raise TypeError(f"the target answered {type(value).__name__}, not {_kinds(answers)}")
    if isinstance(value, RemoteRef):
        ref = RemoteRef(str.__str__(value.remote_id), str.__str__(value.version))
        _identity(ref.remote_id, ref.version, answers)
        return ref  # type: ignore[return-value]
    if isinstance(value, Readback):
        assets = tuple({str.__str__(k): str.__str__(v) for k, v in a.items()} for a in value.assets)
        _identity(str.__str__(value.remote_id), str.__str__(value.version), answers)
        if any(set(a) != FINGERPRINT for a in assets):
            raise TypeError("the target read back an asset that is not name, media_type, sha256")
        return Readback(  # type: ignore[return-value]
            str.__str__(value.remote_id),
            str.__str__(value.version),
            str.__str__(value.title),
            str.__str__(value.summary),
            str.__str__(value.body),
            assets,
        )
    return value


def _identity(remote_id: str, version: str, answers: Answer | None) -> None:
    """With ``answers``: an id or version no record may hold raises ``TypeError`` (recorded as
    the target's failure: the item stops for a person, where a refused bind would not)."""
    problem = remote_text_problem(remote_id) or remote_text_problem(version, empty_ok=True)
    if answers is not None and problem:
        raise TypeError(f"the target answered an id or version that {problem}")


def _kinds(answers: Answer) -> str:
    kinds = answers if isinstance(answers, tuple) else (answers,)
    return " or ".join("None" if k is type(None) else k.__name__ for k in kinds)


def hold(step: Step, target: Target, key: str, remote_id: str) -> None:
    """Take ``remote_id`` for the artifact ``key`` of the step's item before it is bound (or
    read back as its own); :class:`RemoteFailed` (``remote_object_held``) when another item's
    artifact, or another artifact of this item, holds it: an update of the one would rewrite
    the other's delivered object."""
    item = step.item
    name = target_name(target)
    holder = step.worker.store.remote_holds.take(name, remote_id, item.id, key, step.worker.clock())
    if holder != (item.id, key):
        whose = "this item's" if holder.item_id == item.id else f"item {holder.item_id}'s"
        raise RemoteFailed(
            REMOTE_OBJECT_HELD,
            f"the object {remote_id!r} of target {name!r}, for artifact {key!r}, is held by "
            f"{whose} artifact {holder.artifact_key!r}",
        )
