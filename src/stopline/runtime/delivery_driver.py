"""The delivery and revision driver: the IO of the steps ``delivering``, ``pending_readback``
and ``revision_prepared``, committed at durable boundaries (see ``docs/delivery.md``).

``executed`` -> ``staged`` -> per artifact: intent -> (create) -> ``bound`` -> ``delivered``
-> (read back) -> ``completed``; a revision: ``revision_staged`` -> per artifact: intent ->
(update) -> ``revision_bound`` -> (read back) -> ``revision_completed``. The crash points
(``crash_points.BOUNDARIES``) name these commits and the moments right before and after each
remote call. Which write comes next is planned by the core (``core/delivery_plan.py``); every
exception a target raises is mapped to a failure class once (``remote_calls.REMOTE_FAILURES``),
and what the failure then does (retry, stop for a person, fail the revision) is the core's
rule (``core/failures.py``). An object is held for its artifact (``remote_calls.hold``) before
it is bound, updated or read back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core.artifacts import Artifact, Readback, field_diff
from ..core.commands import (
    Bind,
    Command,
    Delivered,
    Intent,
    NeedsEyes,
    Observed,
    QAResult,
    ReadBack,
    Stage,
)
from ..core.delivery_plan import (
    CREATE,
    NextWrite,
    artifact_records,
    keys_to_write,
    next_write,
    revision_scope,
    staged,
)
from ..core.failures import HOOK_TIMEOUT, INVALID_OUTPUT, REMOTE_IDENTITY_MISSING, REVISE_HOOK
from ..core.reasons import Reason
from ..core.states import State
from ..targets.base import RemoteRef, Target
from .hook_output import type_name
from .hooks import HookFailed
from .lease import LeaseLost
from .outcomes import Deliver, Fail, RetryLater
from .outcomes import NeedsEyes as NeedsEyesOutcome
from .remote_calls import FOUND, RemoteFailed, hold, remote

if TYPE_CHECKING:
    from .step import Step

# --- the steps ------------------------------------------------------------------------------


def deliver(step: Step) -> None:
    """``delivering``: run the execute hook and stage its artifacts (once), write each one,
    then ``pending_readback``."""
    if not staged(step.item) and not _execute_and_stage(step):
        return
    if _write_all(step, bound="bound"):
        step.commit(Delivered(**step.signature().lease()))
        step.crash_point("delivered")


def read_back(step: Step) -> None:
    """``pending_readback``: read every object back; the core compares and completes."""
    step.crash_point("before_readback")
    seen = _read_all(step, keys_to_write(step.item))
    if seen is None:
        return
    step.crash_point("after_readback")
    step.commit(ReadBack(**step.signature().lease(), readbacks=seen))


def revise(step: Step) -> None:
    """``revision_prepared``: run the revise hook and stage (once), update each object in
    scope, read them back; the core's gate completes or fails the revision."""
    if not staged(step.item):
        if not _revise_and_stage(step):
            return
        step.crash_point("revision_staged")
    if not _write_all(step, bound="revision_bound"):
        return
    step.crash_point("revision_before_readback")
    seen = _read_all(step, revision_scope(step.item))
    if seen is None:
        return
    step.crash_point("revision_after_readback")
    step.commit(ReadBack(**step.signature().lease(), readbacks=seen))


# --- rendering and staging ------------------------------------------------------------------


def _execute_and_stage(step: Step) -> bool:
    """Run the execute hook (after the guard, on every attempt) and stage what it rendered.
    ``True`` when artifacts were staged and are to be written now."""
    if not step.guard():
        return False
    automation = step.automation
    output = step.call("execute", automation.execute) if automation.execute else Deliver()
    if not isinstance(output, Deliver):
        step.commit_outcome("execute", output)
        return False
    lease = step.signature().lease()
    if output.artifacts and automation.target is None:
        step.commit(NeedsEyes(**lease, owner="operators", why="artifacts but no target"))
        return False
    if not output.artifacts:  # an action with no object to deliver: nothing to stage
        done = step.commit_from_hook("execute", Delivered(**lease, result=dict(output.result)))
        if done.applied:
            step.crash_point("delivered")
        return False
    if not _stage(step, "execute", output.artifacts, output.result):
        return False
    step.crash_point("staged")
    return True


def _revise_and_stage(step: Step) -> bool:
    """Run the revise hook on the delivered artifacts and stage the revised ones."""
    automation = step.automation
    if automation.revise is None:
        step.fail(Reason.MODE_FORBIDS_REVISION.value, "the automation has no revise hook")
        return False
    records = artifact_records(step.item)
    current = [Artifact.from_plain(records[key]["content"]) for key in sorted(records)]
    reason = (step.item.doc("revision") or {}).get("reason", "")
    output = step.call("revise", automation.revise, reason, current)
    if isinstance(output, HookFailed):
        if output.failure_class in (HOOK_TIMEOUT, INVALID_OUTPUT):
            step.fail(output.failure_class, output.message)
        else:  # raised: recorded as the revise hook's failure, naming the exception
            step.fail(REVISE_HOOK, f"{output.failure_class}: {output.message}")
        return False
    if isinstance(output, RetryLater | Fail):
        step.fail(REVISE_HOOK, output.message)
        return False
    if isinstance(output, NeedsEyesOutcome):
        step.fail(REVISE_HOOK, output.why)
        return False
    if not isinstance(output, list | tuple) or not all(isinstance(a, Artifact) for a in output):
        why = f"the revise hook returned {type_name(output)}, not a list of artifacts"
        step.fail(REVISE_HOOK, why)
        return False
    return _stage(step, "revise", output, {})


def _stage(step: Step, hook: str, artifacts: Sequence[Artifact], result: Mapping[str, Any]) -> bool:
    """Run the QA hook on each artifact and commit them with its verdicts (``staged``)."""
    qa: dict[str, QAResult] = {}
    for artifact in artifacts:
        verdict = step.call("qa", step.automation.qa, artifact)
        if isinstance(verdict, HookFailed):
            step.fail(verdict.failure_class, verdict.message, verdict.retryable)
            return False
        if not isinstance(verdict, QAResult):
            verdict = QAResult(False, {"error": f"the qa hook returned {type(verdict).__name__}"})
        qa[artifact.key] = verdict
    command = Stage(
        **step.signature().lease(), artifacts=tuple(artifacts), qa=qa, result=dict(result)
    )
    decision = step.commit_from_hook(hook, command)
    return decision.applied and decision.state in (State.DELIVERING, State.REVISION_PREPARED)


# --- writing ---------------------------------------------------------------------------------


def _write_all(step: Step, *, bound: str) -> bool:
    """Make every remote write still to be made, one at a time, as the core plans them.
    ``False`` when the step stopped (its history says why)."""
    while (planned := next_write(step.item)) is not None:
        try:
            if not _write(step, planned, bound):
                return False
        except RemoteFailed as failed:
            step.fail(failed.failure_class, failed.message)
            return False
    return True


def _write(step: Step, planned: NextWrite, bound: str) -> bool:
    """One planned create or update: look first after a lost outcome, else record the intent;
    guard; call; bind. ``True`` when the object is bound."""
    target = _target(step)
    artifact = Artifact.from_plain(planned.content)
    key = planned.key
    if planned.operation == CREATE:
        if planned.look_first:  # the earlier attempt may have created it: find it by its key
            found = remote(step, target.find, planned.idempotency_key, answers=FOUND)
            if found is not None:
                return _bind(step, key, "found", found.remote_id, found.version, bound)
        elif not _intent(step, planned):
            return False
        if not step.guard():
            return False
        step.crash_point("before_create")
        created = remote(step, target.create, artifact, planned.idempotency_key, answers=RemoteRef)
        step.crash_point("after_create")
        return _bind(step, key, "create", created.remote_id, created.version, bound)
    assert planned.remote_id is not None
    reference = RemoteRef(planned.remote_id, planned.remote_version)
    if planned.look_first:  # the earlier update may have landed: read it first
        seen = remote(step, target.read, reference.remote_id, answers=Readback)
        if seen.readback_hash == artifact.content_hash:
            return _bind(step, key, "update", reference.remote_id, seen.version, bound)
    elif not _intent(step, planned):
        return False
    if not step.guard():
        return False
    hold(step, target, key, reference.remote_id)  # bound before holds were kept, too
    step.crash_point("before_update")
    updated = remote(step, target.update, reference, artifact, answers=RemoteRef)
    step.crash_point("after_update")
    return _bind(step, key, "update", updated.remote_id, updated.version, bound)


def _intent(step: Step, planned: NextWrite) -> bool:
    lease = step.signature().lease()
    command: Command = Intent(
        **lease,
        key=planned.key,
        operation=planned.operation,
        idempotency_key=planned.idempotency_key,
    )
    return step.commit(command).applied


def _bind(
    step: Step, key: str, operation: str, remote_id: str, remote_version: str, boundary: str
) -> bool:
    """Record the remote identity an operation produced (held first when it is new to the
    item), then pass the crash boundary."""
    if operation != "update":
        hold(step, _target(step), key, remote_id)
    command = Bind(
        **step.signature().lease(),
        key=key,
        operation=operation,
        remote_id=remote_id,
        remote_version=remote_version,
    )
    if not step.commit(command).applied:
        return False
    step.crash_point(boundary)
    return True


# --- reading back ----------------------------------------------------------------------------


def _read_all(step: Step, keys: list[str]) -> dict[str, Observed] | None:
    """Each object as read back (``None`` hash: missing); ``None`` when a read failed (the
    failure is recorded)."""
    if not keys:
        return {}
    target = _target(step)
    records = artifact_records(step.item)
    seen: dict[str, Observed] = {}
    for key in keys:
        record = records[key]
        try:
            hold(step, target, key, record["remote_id"])  # bound before holds were kept, too
            back = remote(step, target.read, record["remote_id"], answers=Readback)
        except RemoteFailed as failed:
            if failed.failure_class == REMOTE_IDENTITY_MISSING:
                seen[key] = Observed(None)  # evidence for the core, not a failed read
                continue
            step.fail(failed.failure_class, failed.message)
            return None
        diff = tuple(field_diff(Artifact.from_plain(record["content"]), back))
        seen[key] = Observed(back.readback_hash, back.version, diff)
    return seen


def _target(step: Step) -> Target:
    if step.automation.target is None:
        raise LeaseLost(step.item.id)  # unreachable: staged artifacts imply a target
    return step.automation.target
