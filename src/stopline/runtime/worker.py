"""A worker: claim one due step under a lease, run its hook, commit the outcome as a decision.

Durable boundaries of a delivery, in order (each a commit; a crash between any two resumes
from the last one, see ``docs/delivery.md``):

``executed`` -> ``staged`` -> per artifact: intent -> (create) -> ``bound`` -> ``delivered``
-> (read back) -> ``completed``; a revision: ``revision_staged`` -> per artifact: intent ->
(update) -> ``revision_bound`` -> (read back) -> ``revision_completed``. The crash points
(``BOUNDARIES``) name these commits and the moments right before and after each remote call.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from ..controller import utcnow
from ..core.artifacts import Artifact, field_diff
from ..core.commands import (
    Bind,
    Command,
    Delivered,
    Execute,
    Expire,
    Failure,
    Guard,
    Intent,
    NeedsEyes,
    NothingToDo,
    Observe,
    Observed,
    Propose,
    QAResult,
    ReadBack,
    Report,
    Stage,
    WorkerCommand,
)
from ..core.decide import decide
from ..core.decision import Decision, Outcome
from ..core.ledger import item_ledger_findings
from ..core.policy import Policy
from ..core.reasons import Reason
from ..core.records import Actor, Item
from ..core.states import State
from ..core.step import Context
from ..core.verify import verify_item
from ..core.work import continue_claim
from ..store import Store
from ..store.errors import connection_errors
from ..targets.base import OutcomeUnknown, RemoteMissing, RemoteRef, TargetError, VersionConflict
from ..trust.authority import Authority, Trust
from ..trust.checks import signature_findings
from . import outcomes as o
from .automation import App, Automation, HookContext

S = State
log = logging.getLogger("stopline.worker")

# Test hook: with ``STOPLINE_CRASH_AT=<name>`` the worker process dies (``os._exit``, no
# cleanup, as after SIGKILL) when it reaches the named point. Every point sits on a durable
# boundary: right after a commit, or right before/after a remote call. ``tests/delivery`` runs a
# real crash at each name listed here, and fails when a name has no crash test.
CRASH_ENV = "STOPLINE_CRASH_AT"
DELIVERY_BOUNDARIES = (
    "executed",  # after the commit approved -> delivering (authority re-checked)
    "staged",  # after the commit of the rendered artifacts and their QA evidence
    "before_create",  # after the intent commit, before the create call
    "after_create",  # after the create call returned, before its identity is bound
    "bound",  # after the commit binding the remote identity (created or found)
    "delivered",  # after the commit delivering -> pending_readback
    "before_readback",  # claimed pending_readback, before the first read
    "after_readback",  # every object read, before the final commit (-> completed)
)
REVISION_BOUNDARIES = (
    "revision_staged",  # after the commit of the revised artifacts and their QA evidence
    "before_update",  # after the update intent commit, before the conditional update call
    "after_update",  # after the update call returned, before it is bound
    "revision_bound",  # after the commit binding the updated object
    "revision_before_readback",  # every object updated, before the first read
    "revision_after_readback",  # every object read, before the gate commit
)
BOUNDARIES = DELIVERY_BOUNDARIES + REVISION_BOUNDARIES


SWEEP_EVERY = 0.5  # seconds between sweeps of steps no claim may take any more
REREAD_FOR = 120.0  # seconds a worker keeps trying to read back a commit cut off midway


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class LeaseLost(Exception):
    """The worker's lease is gone; it must stop this step and write nothing more."""


class Worker:
    def __init__(
        self,
        store: Store,
        app: App,
        *,
        worker_id: str | None = None,
        clock: Callable[[], datetime] = utcnow,
        rng: Callable[[], float] = random.random,
        renew: bool = True,
        chain: bool = True,
        trust: Trust | None = None,
        host_trust: bool = True,
    ) -> None:
        """``trust``: the trust root (signed mode); by default (``host_trust``) the host's,
        from ``STOPLINE_TRUST_ROOT``."""
        self.store = store
        self.trust = trust if trust is not None or not host_trust else Trust.from_env()
        self.app = app
        self.automations = app.by_name()
        self.id = worker_id or default_worker_id()
        self.clock = clock
        self.rng = rng
        self.renew = renew
        self.chain = chain
        self._policies: dict[str, Policy] = {a.name: a.policy for a in app.automations}
        self._crash_at = os.environ.get(CRASH_ENV, "")
        self.refusals = 0
        self.transitions = 0  # applied decisions written by this worker
        self._last_sweep: datetime | None = None
        self._unavailable = connection_errors()

    # --- the loop ------------------------------------------------------------------------------

    def sweep(self) -> int:
        """Move steps no claim may take any more (budget spent, revision lease expired)."""
        now = self.clock()
        moved = 0
        for item in self.store.sweepable(now):
            policy = self._policies.get(item.automation) or self.store.policy(item.automation)
            head, legacy = self.store.head(item.id)
            command = Expire(sweeper=self.id, head=head, legacy_seal=legacy)
            decision = decide(item, command, Context(now, policy))
            if decision.applied and self.store.apply(decision):
                moved += 1
                self.transitions += 1
        return moved

    def tick(self) -> bool:
        """Run at most one step. ``True`` when a step was claimed."""
        now = self.clock()
        if self._last_sweep is None or (now - self._last_sweep).total_seconds() >= SWEEP_EVERY:
            self.sweep()
            self._last_sweep = now
        lease = max(a.lease_seconds for a in self.app.automations)
        item = self.store.claim(self.id, now, lease, list(self.automations))
        if item is None:
            return False
        self.process(item)
        return True

    def process(self, item: Item) -> None:
        """Run the claimed step, and the steps after it while each is due at once: the claim
        of the next step rides on the commit that ended the previous one."""
        automation = self.automations[item.automation]
        stop = threading.Event()
        holder = _LeaseHolder(item)
        renewer = None
        if self.renew:
            renewer = threading.Thread(
                target=self._renew_loop, args=(holder, automation.lease_seconds, stop), daemon=True
            )
            renewer.start()
        try:
            # What was claimed must be what its history sealed (a later step of this chain
            # starts from this worker's own commit, which needs no such check).
            if not self.guard(holder, authority=False):
                return
            while True:
                token = holder.item.lease_token
                _Step(self, automation, holder).run()
                nxt = holder.item
                if nxt.lease_owner != self.id or nxt.lease_token == token or not nxt.state.is_work:
                    break
                holder.reset(nxt)
        except LeaseLost:
            log.warning("lease lost on %s; nothing more is written", item.id)
        finally:
            stop.set()
            if renewer is not None:
                renewer.join(timeout=1)

    def _renew_loop(
        self, holder: _LeaseHolder, lease_seconds: float, stop: threading.Event
    ) -> None:
        while not stop.wait(lease_seconds / 3):
            item = holder.item
            if item.lease_owner is None:
                return
            now = self.clock()
            try:
                renewed = self.store.renew(item, now, lease_seconds)
            except self._unavailable as exc:  # the next round tries again
                log.warning("could not renew the lease on %s: %s", item.id, exc)
                continue
            if renewed:
                holder.renewed(now, lease_seconds)
            else:
                return

    # --- committing ------------------------------------------------------------------------

    def guard(self, holder: _LeaseHolder, *, authority: bool = True) -> bool:
        """Before an acting call (with ``authority``) or on a fresh claim: read the record, its
        head event and the registry again and let the core check them (``core/guard.py``).
        ``True``: go ahead. ``False``: the item was stopped (the reasons are in its history).
        Raises :class:`LeaseLost` when the lease is gone: nothing may be called or written."""
        item = holder.current()
        now = self.clock()
        if authority:
            lease = self.automations[item.automation].lease_seconds
            if not self.store.renew(item, now, lease):
                raise LeaseLost(item.id)
            holder.renewed(now, lease)
        fresh = self.store.get(item.id)
        if fresh is None or (fresh.version, fresh.lease_token) != (item.version, item.lease_token):
            raise LeaseLost(item.id)  # someone else wrote it: this claim is over
        head, legacy = self.store.head(item.id)
        registry = self.store.registry() if authority or self.trust is not None else None
        findings = list(registry.findings) if registry is not None else []
        if authority:
            # before acting: the whole history, held against the ledger (a history cut back
            # to before an action, or rewritten and re-hashed, is never acted on)
            history = self.store.history(item.id)
            findings += verify_item(fresh, history)
            findings += item_ledger_findings(item.id, history, self.store.item_ledger(item.id))
        actors = dict(registry.actors) if registry is not None else {}
        if self.trust is not None and registry is not None:
            signed = Authority.build(self.trust, registry.signed)
            actors = signed.actors(now)
            findings += signature_findings(fresh, head, signed, now)
        command = Guard(
            worker=self.id,
            token=item.lease_token,
            head=head,
            legacy_seal=legacy,
            registry=tuple(findings),
            authority=authority,
        )
        holder.item = fresh
        decision = self.commit(holder, command, actors=actors)
        return decision.outcome is Outcome.ZERO_WRITE

    def actors(self, now: datetime) -> dict[str, Actor]:
        """Who holds which roles: the registry chain's actors, or in signed mode the actors
        the trust root certified."""
        registry = self.store.registry()
        if self.trust is None:
            return dict(registry.actors)
        return Authority.build(self.trust, registry.signed).actors(now)

    def commit(
        self, holder: _LeaseHolder, command: Command, *, actors: dict[str, Any] | None = None
    ) -> Decision:
        item = holder.current()
        policy = self._policies[item.automation]
        if actors is None:
            actors = self.actors(now=self.clock()) if isinstance(command, Execute) else {}
        decision = decide(item, command, Context(self.clock(), policy, actors))
        if decision.outcome is Outcome.REFUSED:
            self.refusals += 1
            self.store.record_refusal(decision, command.name, self.id, self.clock())
            if Reason.LEASE_LOST in decision.reasons:
                raise LeaseLost(item.id)
            return decision
        if decision.outcome is Outcome.APPLIED:
            decision = self._chain(decision, policy)
            written = self._apply(decision)
            if written is None:  # cut off before a commit that wrote nothing: decide again
                return self.commit(holder, command, actors=actors)
            if not written:
                fresh = self.store.get(item.id)
                if fresh is not None:
                    holder.item = fresh
                again = decide(holder.current(), command, Context(self.clock(), policy, actors))
                self.refusals += 1
                self.store.record_refusal(again, command.name, self.id, self.clock())
                raise LeaseLost(item.id)
            assert decision.after is not None
            holder.item = decision.after
            self.transitions += 1
        return decision

    def _apply(self, decision: Decision) -> bool | None:
        """``store.apply``. If the database goes away before the outcome of the commit is
        known, read the item back once it answers again: ``True`` when this decision's event
        is its head (the commit went through), ``None`` when the item is as it was (nothing
        was written), ``False`` when another write came first."""
        try:
            return self.store.apply(decision)
        except self._unavailable as exc:
            log.warning("database lost committing %s (%s); reading it back", decision.item_id, exc)
        assert decision.before is not None and decision.event is not None
        deadline = time.monotonic() + REREAD_FOR
        while True:
            try:
                fresh = self.store.get(decision.before.id)
                break
            except self._unavailable:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        if fresh is not None and fresh.head == decision.event.hash:
            return True
        if fresh is not None and fresh.version == decision.before.version:
            return None
        return False

    def _chain(self, decision: Decision, policy: Policy) -> Decision:
        after = decision.after
        if not self.chain or after is None or after.automation not in self.automations:
            return decision
        claimed = continue_claim(after, self.id, self.clock(), policy.lease_seconds)
        return decision if claimed is None else replace(decision, after=claimed)

    def crash_point(self, name: str) -> None:
        if self._crash_at == name:
            log.error("crashing at boundary %s (%s)", name, CRASH_ENV)
            os._exit(137)


class _LeaseHolder:
    """The worker's view of its claimed item, with the latest lease expiry it renewed."""

    def __init__(self, item: Item) -> None:
        self.item = item
        self._lock = threading.Lock()
        self._expires: datetime | None = item.lease_expires_at

    def reset(self, item: Item) -> None:
        with self._lock:
            self.item = item
            self._expires = item.lease_expires_at

    def renewed(self, now: datetime, seconds: float) -> None:
        with self._lock:
            self._expires = now + timedelta(seconds=seconds)

    def current(self) -> Item:
        with self._lock:
            expires = self._expires
        item = self.item
        later = item.lease_expires_at is None or (
            expires is not None and expires > item.lease_expires_at
        )
        if item.lease_owner is not None and expires is not None and later:
            item = replace(item, lease_expires_at=expires)
        return item


class _Step:
    """One claimed step of one item."""

    def __init__(self, worker: Worker, automation: Automation, holder: _LeaseHolder) -> None:
        self.w = worker
        self.a = automation
        self.h = holder

    @property
    def item(self) -> Item:
        return self.h.item

    def ctx(self) -> HookContext:
        return HookContext(
            now=self.w.clock(),
            item=self.item,
            automation=self.a.name,
            logger=logging.getLogger(f"stopline.automation.{self.a.name}"),
            clock=self.w.clock,
        )

    def wc(self) -> dict[str, Any]:
        return {"worker": self.w.id, "token": self.item.lease_token}

    def commit(self, command: Command) -> Decision:
        return self.w.commit(self.h, command)

    def run(self) -> None:
        state = self.item.state
        handlers: dict[State, Callable[[], None]] = {
            S.OBSERVING: self.observe,
            S.CLASSIFIED: self.propose,
            S.APPROVED: self.execute,
            S.DELIVERING: self.deliver,
            S.PENDING_READBACK: self.read_back,
            S.REVISION_PREPARED: self.revise,
        }
        handler = handlers.get(state)
        if handler is None:  # a claim only returns work states; fail closed all the same
            raise LeaseLost(self.item.id)
        handler()

    # --- hooks and their outcomes ------------------------------------------------------------

    def call(self, hook: Callable[..., Any], *args: Any) -> Any:
        try:
            return hook(self.ctx(), *args)
        except self.a.retry_on as exc:
            return o.RetryLater(str(exc) or type(exc).__name__, type(exc).__name__)
        except self.a.terminal_on as exc:
            return o.Fail(str(exc) or type(exc).__name__, type(exc).__name__)
        except LeaseLost:
            raise
        except Exception as exc:  # an unknown failure is never retried blind
            log.exception("hook %s of %s raised", getattr(hook, "__name__", hook), self.a.name)
            return o.NeedsEyes(f"unexpected {type(exc).__name__}: {exc}"[:500])

    def common(self, out: Any) -> bool:
        """Commit the outcomes every hook may return; ``True`` when one was committed."""
        if isinstance(out, o.NeedsEyes):
            self.commit(
                NeedsEyes(**self.wc(), owner=out.owner, why=out.why, evidence=dict(out.evidence))
            )
        elif isinstance(out, o.RetryLater):
            self.failure(out.failure_class, out.message, retryable=True)
        elif isinstance(out, o.Fail):
            self.failure(out.failure_class, out.message, retryable=False)
        else:
            return False
        return True

    def failure(self, cls: str, message: str, *, retryable: bool) -> Decision:
        return self.commit(
            Failure(
                **self.wc(),
                failure_class=cls,
                message=message,
                retryable=retryable,
                jitter_sample=self.w.rng(),
            )
        )

    def unexpected(self, hook: str, out: Any) -> None:
        why = f"{hook} hook returned {type(out).__name__}, which it may not return"
        self.commit(NeedsEyes(**self.wc(), owner="operators", why=why))

    def observe(self) -> None:
        out = self.call(self.a.observe)
        if isinstance(out, o.Evidence):
            at = out.observed_at or self.w.clock()
            self.commit(
                Observe(
                    **self.wc(),
                    evidence=dict(out.data),
                    observed_at=at,
                    classification=out.classification,
                )
            )
        elif not self.common(out):
            self.unexpected("observe", out)

    def propose(self) -> None:
        out = self.call(self.a.propose)
        if isinstance(out, o.Proposal):
            command = Propose(
                **self.wc(),
                action=out.action,
                target=out.target,
                params=dict(out.params),
                rationale=out.rationale,
            )
            self.commit(command)
        elif isinstance(out, o.ReportForReview):
            self.commit(Report(**self.wc(), report=dict(out.report)))
        elif isinstance(out, o.NothingToDo):
            self.commit(NothingToDo(**self.wc(), reason=out.reason))
        elif not self.common(out):
            self.unexpected("propose", out)

    def guard(self) -> bool:
        return self.w.guard(self.h)

    def execute(self) -> None:
        if not self.guard():
            return
        decision = self.commit(Execute(**self.wc()))
        if decision.applied and decision.state is S.DELIVERING:
            self.w.crash_point("executed")

    # --- delivery --------------------------------------------------------------------------------

    def artifacts(self) -> dict[str, dict[str, Any]]:
        return {a["key"]: dict(a) for a in self.item.doc("artifacts") or ()}

    def target(self) -> Any:
        if self.a.target is None:
            raise LeaseLost(self.item.id)  # unreachable: staged artifacts imply a target
        return self.a.target

    def stage(self, artifacts: list[Artifact], result: Mapping[str, Any]) -> bool:
        qa: dict[str, QAResult] = {}
        for artifact in artifacts:
            verdict = self.call(self.a.qa, artifact)
            qa[artifact.key] = (
                verdict
                if isinstance(verdict, QAResult)
                else QAResult(False, {"error": str(verdict)})
            )
        decision = self.commit(
            Stage(**self.wc(), artifacts=tuple(artifacts), qa=qa, result=dict(result))
        )
        return (
            decision.applied
            and decision.state is self.item.state
            and decision.state in (S.DELIVERING, S.REVISION_PREPARED)
        )

    def deliver(self) -> None:
        if not self.item.doc("staged"):
            if not self.guard():  # every attempt of the execute hook, retries included
                return
            if self.a.execute is None:
                out: Any = o.Deliver()
            else:
                out = self.call(self.a.execute)
            if not isinstance(out, o.Deliver):
                if not self.common(out):
                    self.unexpected("execute", out)
                return
            if out.artifacts and self.a.target is None:
                self.commit(
                    NeedsEyes(**self.wc(), owner="operators", why="artifacts but no target")
                )
                return
            if not out.artifacts:  # an action with no object to deliver: nothing to stage
                self.commit(Delivered(**self.wc(), result=dict(out.result)))
                self.w.crash_point("delivered")
                return
            if not self.stage(list(out.artifacts), out.result):
                return
            self.w.crash_point("staged")
        for key, record in sorted(self.artifacts().items()):
            if record["remote_id"] and record.get("last_op"):
                continue
            if not self.write_one(key, record):
                return
        self.commit(Delivered(**self.wc()))
        self.w.crash_point("delivered")

    def write_one(self, key: str, record: dict[str, Any]) -> bool:
        """Create (or, for an object bound in an earlier round, update) one artifact."""
        target = self.target()
        artifact = Artifact.from_plain(record["content"])
        ikey = record["idempotency_key"]
        try:
            if record["remote_id"]:
                return self.update_one(key, record, artifact, "bound")
            if record.get("intent") is not None:
                # An earlier attempt recorded its intent and then lost the outcome: look first.
                found = target.find(ikey)
                if found is not None:
                    return self.bind(key, "found", found.remote_id, found.version, "bound")
            else:
                self.commit(Intent(**self.wc(), key=key, operation="create", idempotency_key=ikey))
            if not self.guard():
                return False
            self.w.crash_point("before_create")
            ref = target.create(artifact, ikey)
            self.w.crash_point("after_create")
        except OutcomeUnknown as exc:
            self.failure("outcome_unknown", str(exc), retryable=True)
            return False
        except (RemoteMissing, VersionConflict) as exc:
            self.commit(
                NeedsEyes(**self.wc(), owner="operators", why=f"{type(exc).__name__}: {exc}")
            )
            return False
        except TargetError as exc:
            self.failure(Reason.TARGET_UNAVAILABLE.value, str(exc), retryable=True)
            return False
        return self.bind(key, "create", ref.remote_id, ref.version, "bound")

    def bind(
        self, key: str, operation: str, remote_id: str, remote_version: str, boundary: str
    ) -> bool:
        """Record the remote identity an operation produced, then pass the crash boundary."""
        self.commit(
            Bind(
                **self.wc(),
                key=key,
                operation=operation,
                remote_id=remote_id,
                remote_version=remote_version,
            )
        )
        self.w.crash_point(boundary)
        return True

    def update_one(
        self, key: str, record: dict[str, Any], artifact: Artifact, boundary: str
    ) -> bool:
        """Update a bound object; after a lost outcome, read it first and bind if already done."""
        target = self.target()
        ref = RemoteRef(record["remote_id"], record["remote_version"] or "")
        intent = record.get("intent")
        seq = self.item.doc("delivery_seq") or 0
        if (
            intent is not None
            and intent.get("operation") == "update"
            and intent.get("delivery_seq") == seq
        ):
            seen = target.read(ref.remote_id)
            if seen.readback_hash == artifact.content_hash:
                return self.bind(key, "update", ref.remote_id, seen.version, boundary)
        else:
            self.commit(
                Intent(
                    **self.wc(),
                    key=key,
                    operation="update",
                    idempotency_key=record["idempotency_key"],
                )
            )
        if not self.guard():
            return False
        self.w.crash_point("before_update")
        new = target.update(ref, artifact)
        self.w.crash_point("after_update")
        return self.bind(key, "update", new.remote_id, new.version, boundary)

    def observe_all(self, keys: list[str]) -> dict[str, Observed] | None:
        target = self.target()
        seen: dict[str, Observed] = {}
        records = self.artifacts()
        for key in keys:
            record = records[key]
            try:
                back = target.read(record["remote_id"])
            except RemoteMissing:
                seen[key] = Observed(None)
                continue
            except TargetError as exc:
                self.failure(
                    Reason.TARGET_UNAVAILABLE.value,
                    str(exc),
                    retryable=self.item.state is not S.REVISION_PREPARED,
                )
                return None
            diff = tuple(field_diff(Artifact.from_plain(record["content"]), back))
            seen[key] = Observed(back.readback_hash, back.version, diff)
        return seen

    def read_back(self) -> None:
        self.w.crash_point("before_readback")
        keys = sorted(self.artifacts())
        seen = self.observe_all(keys) if keys else {}
        if seen is None:
            return
        self.w.crash_point("after_readback")
        self.commit(ReadBack(**self.wc(), readbacks=seen))

    # --- revision ----------------------------------------------------------------------------

    def revise(self) -> None:
        revision = self.item.doc("revision") or {}
        scope = list(revision.get("scope", ()))
        if not revision.get("staged"):
            if self.a.revise is None:
                self.failure(
                    Reason.MODE_FORBIDS_REVISION.value,
                    "the automation has no revise hook",
                    retryable=False,
                )
                return
            current = [
                Artifact.from_plain(r["content"]) for _, r in sorted(self.artifacts().items())
            ]
            out = self.call(self.a.revise, revision.get("reason", ""), current)
            if isinstance(out, o.RetryLater | o.Fail | o.NeedsEyes):
                self.failure(
                    "revise_hook", getattr(out, "message", getattr(out, "why", "")), retryable=False
                )
                return
            if isinstance(out, Artifact) or not (
                isinstance(out, list | tuple) and all(isinstance(a, Artifact) for a in out)
            ):
                why = f"the revise hook returned {type(out).__name__}, not a list of artifacts"
                self.failure("revise_hook", why, retryable=False)
                return
            if not self.stage(list(out), {}):
                return
            self.w.crash_point("revision_staged")
        for key in sorted(scope):
            record = self.artifacts()[key]
            if record.get("last_op") == "update":
                continue  # updated and bound before a crash or a resume
            try:
                content = Artifact.from_plain(record["content"])
                if not self.update_one(key, record, content, "revision_bound"):
                    return  # stopped before the call (the reasons are in its history)
            except RemoteMissing as exc:  # never recreated: the revision stops
                self.failure(Reason.REMOTE_IDENTITY_MISSING.value, str(exc), retryable=False)
                return
            except VersionConflict as exc:
                self.failure(Reason.REMOTE_VERSION_CONFLICT.value, str(exc), retryable=False)
                return
            except OutcomeUnknown as exc:  # the resumed revision reads the object first
                self.failure("outcome_unknown", str(exc), retryable=False)
                return
            except TargetError as exc:
                self.failure(Reason.TARGET_UNAVAILABLE.value, str(exc), retryable=False)
                return
        self.w.crash_point("revision_before_readback")
        seen = self.observe_all(sorted(scope))
        if seen is None:
            return
        self.w.crash_point("revision_after_readback")
        self.commit(ReadBack(**self.wc(), readbacks=seen))


__all__ = [
    "BOUNDARIES",
    "CRASH_ENV",
    "DELIVERY_BOUNDARIES",
    "REVISION_BOUNDARIES",
    "LeaseLost",
    "Worker",
    "WorkerCommand",
]
