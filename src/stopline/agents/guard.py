"""The approval guard: a Python tool function an agent calls runs only once a person approved
that exact call.

::

    guard = ApprovalGuard(store, agent="ops-bot", automation="ops")

    @guard.requires_approval(action="restart", target="billing-api")
    def restart(service: str, grace: int = 30) -> dict:
        ...

The first call records a proposal whose parameters are the call's arguments (on an item of
its own: the key is the function's name and the digest of action, target and arguments) and
raises :class:`ApprovalPending` (or returns a :class:`Pending`, with ``on_pending="return"``)
naming the item and the proposal digest. Once a person approved it, the same call takes the
acting step (authority checked again, ``begin_action``), runs the function exactly once with
exactly the approved arguments (a person's edit included) and records the outcome on the item.
A call with other arguments is another proposal. A call after completion returns the recorded
outcome and writes nothing. A call whose action was begun but has no recorded outcome (the
process died mid-call) never runs it again: :class:`ActionStopped`, for a person to look at.
``async def`` functions are guarded the same way.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

from ..core.canonical import CanonicalError, digest, to_plain
from ..core.reasons import Reason
from ..core.states import State
from ..store import Store
from .answers import Answer
from .desk import AgentDesk

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Pending:
    """A call waiting for a person: its item (``ref`` is ``AUTOMATION/KEY``) and digest."""

    item: str
    ref: str
    digest: str
    state: str
    status: str  # "waiting", or "changed" when a person edited the proposal


class GuardError(Exception):
    """A guarded call that did not run; ``reasons`` are reason codes."""

    def __init__(self, message: str, reasons: tuple[str, ...] = (), state: str | None = None):
        super().__init__(message)
        self.reasons = reasons
        self.state = state


class ApprovalPending(GuardError):
    """The call waits for a person's approval (``pending``)."""

    def __init__(self, pending: Pending) -> None:
        super().__init__(
            f"{pending.ref} waits for approval of {pending.digest[:12]}", (), pending.state
        )
        self.pending = pending


class ApprovalRejected(GuardError):
    """A person rejected the call."""


class ActionStopped(GuardError):
    """The call's item stopped for a person (or its action's outcome is unknown)."""


def _refused(answer: Answer, what: str) -> GuardError:
    state = answer.data.get("state")
    why = "; ".join(answer.to_plain()["explanation"])
    return GuardError(f"{what}: {why}", answer.reasons, state)


def _arguments(signature: inspect.Signature, args: Any, kwargs: Any) -> dict[str, Any]:
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return cast(dict[str, Any], to_plain(dict(bound.arguments)))


def _call(fn: Callable[..., Any], signature: inspect.Signature, params: Mapping[str, Any]) -> Any:
    """Call ``fn`` with ``params`` as :func:`_arguments` recorded them."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for name, p in signature.parameters.items():
        if name not in params:
            continue
        value = params[name]
        if p.kind is p.POSITIONAL_ONLY:
            args.append(value)
        elif p.kind is p.VAR_POSITIONAL:
            args.extend(value)
        elif p.kind is p.VAR_KEYWORD:
            kwargs.update(value)
        else:
            kwargs[name] = value
    return fn(*args, **kwargs)


def _outcome(value: Any) -> dict[str, Any]:
    try:
        plain = to_plain(value)
        digest(plain)
    except (CanonicalError, TypeError, ValueError):
        return {"repr": repr(value)[:2000]}
    return {"value": plain}


class ApprovalGuard:
    """Guards the tool functions of one agent (an actor holding the ``agent`` role) on one
    agent automation (``AgentAutomation``)."""

    def __init__(
        self,
        store: Store,
        *,
        agent: str,
        automation: str,
        on_pending: Literal["raise", "return"] = "raise",
        desk: AgentDesk | None = None,
    ) -> None:
        self.desk = desk or AgentDesk(store, agent)
        self.automation = automation
        self.on_pending = on_pending

    def requires_approval(
        self,
        *,
        action: str,
        target: str | Callable[..., str],
        rationale: str = "",
    ) -> Callable[[F], F]:
        """Guard a function: it runs only on an approved proposal of exactly its call.
        ``target`` may be a function of the call's arguments."""

        def decorate(fn: F) -> F:
            signature = inspect.signature(fn)

            def prepare(args: Any, kwargs: Any) -> tuple[str, str, dict[str, Any]]:
                try:
                    params = _arguments(signature, args, kwargs)
                    digest(params)
                except (CanonicalError, TypeError, ValueError) as error:
                    raise GuardError(
                        f"the arguments of {fn.__name__} have no JSON form: {error}",
                        (Reason.INVALID_INPUT,),
                    ) from error
                where = target(*args, **kwargs) if callable(target) else target
                key = (
                    f"{fn.__name__}:"
                    + digest({"action": action, "target": where, "params": params})[:24]
                )
                return key, where, params

            if inspect.iscoroutinefunction(fn):

                @functools.wraps(fn)
                async def run_async(*args: Any, **kwargs: Any) -> Any:
                    key, where, params = prepare(args, kwargs)
                    ready = await asyncio.to_thread(self._ready, key, action, where, params)
                    if isinstance(ready, Pending):
                        return self._pending(ready)
                    if ready[0] == "done":
                        return ready[1]
                    ref, approved, proposal_digest = ready[1]
                    try:
                        value = await _call(fn, signature, approved)
                    except BaseException as error:
                        await asyncio.to_thread(self._failed, ref, proposal_digest, error)
                        raise
                    await asyncio.to_thread(self._done, ref, proposal_digest, value)
                    return value

                return cast(F, run_async)

            @functools.wraps(fn)
            def run(*args: Any, **kwargs: Any) -> Any:
                key, where, params = prepare(args, kwargs)
                ready = self._ready(key, action, where, params)
                if isinstance(ready, Pending):
                    return self._pending(ready)
                if ready[0] == "done":
                    return ready[1]
                ref, approved, proposal_digest = ready[1]
                try:
                    value = _call(fn, signature, approved)
                except BaseException as error:
                    self._failed(ref, proposal_digest, error)
                    raise
                self._done(ref, proposal_digest, value)
                return value

            return cast(F, run)

        return decorate

    # --- the steps of a call ------------------------------------------------------------------

    def _pending(self, pending: Pending) -> Pending:
        if self.on_pending == "return":
            return pending
        raise ApprovalPending(pending)

    def _ready(
        self, key: str, action: str, target: str, params: dict[str, Any]
    ) -> Pending | tuple[str, Any]:
        """What the call may do now: wait (:class:`Pending`), return a recorded outcome
        (``("done", value)``) or run (``("run", (ref, approved params, digest))``), once the
        acting step is taken. Raises :class:`GuardError` for anything else."""
        ref = f"{self.automation}/{key}"
        found = self.desk.get(ref)
        if not found.ok and Reason.UNKNOWN_ITEM not in found.reasons:
            raise _refused(found, ref)
        state = found.data.get("state") if found.ok else None
        if state in (None, State.OBSERVING.value, State.CLASSIFIED.value):
            evidence = {"function": key.partition(":")[0], "arguments": params}
            made = self.desk.propose(self.automation, key, action, target, params, evidence)
            if not made.ok:
                raise _refused(made, ref)
            found = made
            state = made.data["state"]
        view = found.data
        proposal_digest = str(view.get("digest") or "")
        if state == State.AWAITING_APPROVAL.value:
            return Pending(view["item"], ref, proposal_digest, state, "waiting")
        if state == State.COMPLETED.value:
            result = view.get("result") or {}
            return ("done", result.get("value", result))
        if state == State.CLOSED.value and view.get("rejection"):
            reason = view["rejection"].get("reason", "")
            raise ApprovalRejected(f"{ref} was rejected: {reason}", (), state)
        if state == State.APPROVED.value:
            begun = self.desk.begin(ref, proposal_digest)
            if not begun.ok:
                raise _refused(begun, f"{ref} may not act now")
            # The arguments of the record the acting step checked (its seal, its digest, its
            # approvals), never of the one read before it: a row forged before that read and
            # put back before the step would otherwise run arguments nobody approved.
            if begun.data.get("digest") != proposal_digest:
                raise ActionStopped(f"{ref}: the acting step checked another proposal", (), state)
            approved = (begun.data.get("proposal") or {}).get("params") or {}
            return ("run", (ref, dict(approved), proposal_digest))
        if state == State.DELIVERING.value:
            raise ActionStopped(
                f"{ref}: the action was begun and no outcome was recorded; it is never run"
                " again on its own (a person looks at it)",
                (),
                state,
            )
        raise ActionStopped(f"{ref} is {state}", (), state)

    def _done(self, ref: str, proposal_digest: str, value: Any) -> None:
        recorded = self.desk.record(ref, proposal_digest, "done", _outcome(value))
        if not recorded.ok:
            raise _refused(recorded, f"{ref}: the outcome was not recorded")

    def _failed(self, ref: str, proposal_digest: str, error: BaseException) -> None:
        message = f"{type(error).__name__}: {error}"[:2000]
        self.desk.record(ref, proposal_digest, "failed", message=message)

    def wait(self, pending: Pending, timeout: int = 30) -> str:
        """Wait (at most ``timeout`` s) for a person's decision on ``pending``: ``approved``,
        ``rejected``, ``changed``, ``waiting`` (or the item's state)."""
        answer = self.desk.wait(pending.ref, None, timeout)
        if not answer.ok:
            raise _refused(answer, pending.ref)
        return str(answer.data["status"])
