"""A worker: the claim loop and the lease holder.

``Worker.tick()`` sweeps the steps no claim may take any more, claims one due step (each
automation's item with that automation's own lease), and runs it (``step.py``, with the
delivery and revision driver in ``delivery_driver.py``) while a thread renews the lease
(``lease.py``). Every write goes through :meth:`Worker.commit`: ``decide()``, then the one
commit path (``commit.py``). Hooks run with a time limit, a plain hook on a thread of its own
and an ``async`` hook on the event loop (``hooks.py``), so no hook can take the worker down.

With ``concurrency`` or ``batch`` above 1, one worker runs several items at once
(``slots.py``): it claims up to ``batch`` items in one statement, runs each on a step thread
(its plain hooks in place, timed by a watchdog: ``watchdog.py``) while one thread renews every
lease in flight, and writes the applied decisions in groups (``group_commit.py``), each on its
own compare-and-set."""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Any

from .. import logs
from ..clock import Clock, utcnow
from ..core.commands import Command, Execute, Expire, Guard
from ..core.decide import decide
from ..core.decision import Decision, Outcome, refused
from ..core.ledger import item_ledger_findings
from ..core.policy import Policy
from ..core.reasons import Reason
from ..core.records import Actor, Item
from ..core.step import Context
from ..core.verify import verify_item
from ..core.work import continue_claim
from ..store import Store
from ..store.errors import connection_errors
from ..store.protocol import GuardReads
from ..trust.authority import Authority, Trust
from ..trust.checks import signature_findings
from . import tracing
from .automation import App
from .claiming import claim_due, start_in_lockstep, start_what_fits
from .clock_check import ClockCheck
from .commit import Committed, commit, log_decision, reading_back
from .crash_points import CrashPoints
from .drivers import drivers
from .heartbeat import Heartbeat, observe_step
from .hooks import HookFailed, HookRunner, describe
from .lease import LeaseHolder, LeaseLost, Renewer, renewal_due
from .slots import Slots
from .step import Step, Undecidable

log = logging.getLogger("stopline.worker")

SWEEP_EVERY = 0.5  # seconds between sweeps of steps no claim may take any more


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Worker:
    def __init__(
        self,
        store: Store,
        app: App,
        *,
        worker_id: str | None = None,
        clock: Clock = utcnow,
        rng: Callable[[], float] = random.random,
        renew: bool = True,
        chain: bool = True,
        trust: Trust | None = None,
        host_trust: bool = True,
        concurrency: int = 1,
        batch: int = 1,
        ahead: int = 0,
        lockstep: bool = False,
        max_clock_skew: float | None = None,
    ) -> None:
        """``trust``: the trust root (signed mode); by default (``host_trust``) the host's,
        from ``STOPLINE_TRUST_ROOT``. ``concurrency``: the most items in flight at once;
        ``batch``: the most items one claim takes and one commit transaction writes (in flight
        at once: the larger of the two). With both 1, one step at a time on this thread.
        ``ahead``: the most items claimed beyond those, each waiting for a step thread with its
        lease renewed (default 0; above 0, the worker runs its steps on step threads even one
        at a time, and its loop claims while they run: see ``docs/automations.md``).
        ``lockstep``: the items in flight as greenlets of this thread (``lockstep.py``).
        ``max_clock_skew``: see ``clock_check.py`` (claims nothing while the clock is off)."""
        self.store = store
        self.trust = trust if trust is not None or not host_trust else Trust.from_env()
        self.app, self.automations = app, app.by_name()
        self.id = worker_id or default_worker_id()
        self.clock, self.rng, self.renew = clock, rng, renew
        self.chain = chain  # fold the claim of a next step due at once into the last commit
        self.policies: dict[str, Policy] = {a.name: a.policy for a in app.automations}
        self.leases = {a.name: a.lease_seconds for a in app.automations}
        self.hooks, self.crash_point = HookRunner(), CrashPoints()
        self.refusals = 0
        self.transitions = 0  # applied decisions written by this worker
        self.claims = 0  # items claimed (a claim may carry several transitions)
        self._last_sweep: datetime | None = None
        self._unavailable = connection_errors()
        self.beat = Heartbeat(store, self.id, sorted(self.automations))
        self.clocked = ClockCheck(store, clock, max_clock_skew, self.beat)
        self.concurrency, self.batch = concurrency, batch
        self._count = threading.Lock()
        self._local = threading.local()  # each step thread's own hook runner
        self.renewer = Renewer(store, clock)  # one thread renews every lease this worker holds
        self.slots, self.committer, self.lockstep, self.reader = drivers(
            store, app, self.process, (concurrency, batch, ahead), lockstep
        )

    def hook_runner(self) -> HookRunner:
        """The runner of this thread's hooks (each step thread has its own)."""
        if self.lockstep is not None:
            return self.lockstep.runner
        if self.slots is None:
            return self.hooks
        runner: HookRunner | None = getattr(self._local, "hooks", None)
        if runner is None:
            runner = self._local.hooks = HookRunner(self.slots.watchdog)
        return runner

    def counted(self, name: str) -> None:
        """Add one to the counter ``name`` (``claims``, ``transitions``, ``refusals``)."""
        with self._count:
            setattr(self, name, getattr(self, name) + 1)

    # --- the loop ----------------------------------------------------------------------------

    def tick(self) -> bool:
        """Run at most one step (or, running several at once, start what there is room for).
        ``True`` when a step was claimed, or steps are still in flight."""
        now = self.clock()
        self.beat.tick(now)
        if not self.clocked.ok():  # a host clock the server's disagrees with decides nothing
            return False
        if self._last_sweep is None or (now - self._last_sweep).total_seconds() >= SWEEP_EVERY:
            self.sweep()
            self._last_sweep = now
        if not self.leases:
            return False
        if self.slots is not None:
            return start_what_fits(self, now, self.slots)
        if self.lockstep is not None:
            return start_in_lockstep(self, now, self.lockstep)
        shortest = min(self.leases.values())
        claimed = claim_due(self, now, shortest, self.leases, 1)
        if not claimed:
            return False
        self.claims += 1
        self.process(*claimed[0])
        return True

    def close(self) -> None:
        """Wait for every step in flight to end (a worker running several at once)."""
        for running in (self.slots, self.lockstep):
            if running is not None:
                running.drain()
                running.raise_failure()

    def sweep(self) -> int:
        """Move steps no claim may take any more (budget spent, revision lease expired)."""
        now = self.clock()
        moved = 0
        for item in self.store.sweepable(now):
            policy = self.policies.get(item.automation) or self.store.policy(item.automation)
            head, legacy = self.store.head(item.id)
            command = Expire(sweeper=self.id, head=head, legacy_seal=legacy)
            decision = decide(item, command, Context(now, policy))
            done = commit(self.store, decision, command=command.name, actor=self.id, now=now)
            if done.status is Committed.APPLIED:
                moved += 1
                self.counted("transitions")
        return moved

    def process(
        self, item: Item, reads: GuardReads | None = None, holder: LeaseHolder | None = None
    ) -> None:
        """Run the claimed step, and the steps after it while each is due at once: the claim
        of the next step rides on the commit that ended the previous one. ``reads``: what the
        claim read for the check of a fresh claim (else that check reads it). ``holder``: the
        claim's holder, its lease renewed since the claim (else one from ``item``)."""
        self._hold(holder or LeaseHolder(item), fresh=True, reads=reads)

    def _hold(
        self,
        holder: LeaseHolder,
        *,
        fresh: bool,
        reads: GuardReads | None = None,
        first: Callable[[Step], object] | None = None,
    ) -> None:
        """Run the held item's steps, its lease renewed meanwhile. ``fresh``: a claim, checked
        first. ``first``: what the first step does instead of its hooks (a step taken over
        from a hook past its time, see :meth:`_take_over`)."""
        item = holder.item
        automation = self.automations[item.automation]
        lease = self.leases[item.automation]
        fields = {"item": item.id, "automation": item.automation, "worker": self.id}
        renewal = self.renewer.holding(holder, lease) if self.renew else nullcontext()
        try:
            with logs.context(**fields), renewal:
                # What was claimed must be what its history sealed (a later step of this chain
                # starts from this worker's own commit, which needs no such check).
                if fresh and not self.guard(holder, authority=False, reads=reads):
                    return
                while True:
                    token = holder.item.lease_token
                    state = holder.item.state.value
                    with (
                        logs.context(state=state),
                        tracing.span("stopline.step", state=state, **fields),
                        observe_step(self, automation.name, state),
                    ):
                        if first is None:
                            Step(self, automation, holder).run()
                        else:
                            first(Step(self, automation, holder))
                    first = None
                    after = holder.item
                    if (
                        after.lease_owner != self.id
                        or after.lease_token == token
                        or not after.state.is_work
                    ):
                        break
                    holder.reset(after)
        except LeaseLost:
            log.warning("lease lost on %s; nothing more is written", item.id)

    def hand_over(self, holder: LeaseHolder) -> Callable[[HookFailed], None] | None:
        """What goes on with a step whose plain hook, called in place, ran past its time:
        running several items at once, a new step thread takes the step over (see
        ``watchdog.py``); one step at a time, ``None`` (the hook runs on a thread of its own)."""
        if self.slots is None:
            return None
        return partial(self._take_over, self.slots, holder)

    def _take_over(self, slots: Slots, holder: LeaseHolder, failed: HookFailed) -> None:
        """On the watchdog's thread: a new step thread records the timeout, as the step would
        have, and goes on with the item; the hook's own thread writes nothing more."""
        taken = holder.handed_over()
        record = partial(Step.record, failed=failed)
        slots.take_over(taken.item, partial(self._hold, taken, fresh=False, first=record))

    # --- before acting, and committing -------------------------------------------------------

    def guard(
        self, holder: LeaseHolder, *, authority: bool = True, reads: GuardReads | None = None
    ) -> bool:
        """Before an acting call (with ``authority``) or on a fresh claim: read the record, its
        head event and the registry again and let the core check them (``core/guard.py``).
        ``True``: go ahead. ``False``: the item was stopped (the reasons are in its history).
        Raises :class:`LeaseLost` when the lease is gone: nothing may be called or written.
        ``reads``: on a fresh claim outside signed mode, what the claim itself read (the row,
        its head and its upgrade seal). Before acting, a lease the row shows with less than
        two thirds left is renewed first (refused: :class:`LeaseLost`)."""
        item = holder.current()
        now = self.clock()
        # one snapshot: the row and its head; before acting its history, ledger and registry
        if reads is None or authority or self.trust is not None:
            reads = self.reader.guard_reads(  # before acting: with other items', if any
                item.id, history=authority, registry=authority or self.trust is not None
            )
        fresh, head, legacy, registry = reads.item, reads.head, reads.legacy_seal, reads.registry
        if fresh is None or (fresh.version, fresh.lease_token) != (item.version, item.lease_token):
            raise LeaseLost(item.id)  # someone else wrote it: this claim is over
        findings = list(registry.findings) if registry is not None else []
        if authority:
            lease = self.leases[item.automation]
            if renewal_due(fresh, now, lease):
                if not self.store.renew(fresh, now, lease):
                    raise LeaseLost(item.id)
                holder.renewed(now, lease)
            # before acting: the whole history, held against the ledger (a history cut back
            # to before an action, or rewritten and re-hashed, is never acted on)
            findings += verify_item(fresh, reads.history)
            findings += item_ledger_findings(item.id, reads.history, reads.ledger)
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
        if authority and decision.outcome is Outcome.ZERO_WRITE:
            holder.checked(fresh.version, actors)
        return decision.outcome is Outcome.ZERO_WRITE

    def actors(self, now: datetime) -> dict[str, Actor]:
        """Who holds which roles: the registry chain's actors, or in signed mode the actors
        the trust root certified."""
        registry = self.store.registry()
        if self.trust is None:
            return dict(registry.actors)
        return Authority.build(self.trust, registry.signed).actors(now)

    def commit(
        self, holder: LeaseHolder, command: Command, *, actors: dict[str, Any] | None = None
    ) -> Decision:
        """Decide ``command`` on the held item and commit the decision. A refusal is audited
        (``lease_lost`` raises :class:`LeaseLost`); an applied decision becomes the held item;
        another write that came first ends the claim (:class:`LeaseLost`)."""
        item = holder.current()
        policy = self.policies[item.automation]
        if actors is None and isinstance(command, Execute):
            # the view of the check that passed just before, on this very record; else read
            actors = holder.checked_actors(item.version)
            if actors is None:
                actors = self.actors(now=self.clock())
        elif actors is None:
            actors = {}
        while True:
            decision = self._decide(holder.current(), command, policy, actors)
            if decision.applied:
                decision = self._chain(decision, policy)
                self._finishing(decision)
            done = commit(
                self.store,
                decision,
                command=command.name,
                actor=self.id,
                now=self.clock(),
                write=self._apply_reading_back,
            )
            if done.status is not Committed.CUT_OFF:
                break  # (cut off before a commit that wrote nothing: decide again)
        if done.status is Committed.REFUSED:
            self.counted("refusals")
            if Reason.LEASE_LOST in decision.reasons:
                raise LeaseLost(item.id)
        elif done.status is Committed.APPLIED:
            assert decision.after is not None
            holder.item = decision.after
            self.counted("transitions")
        elif done.status is Committed.LOST:
            self._lost(holder, command, policy, actors)
        log_decision(command.name, item.id, done.status.name.lower(), decision)
        return decision

    def _decide(
        self, item: Item, command: Command, policy: Policy, actors: dict[str, Any]
    ) -> Decision:
        try:
            return decide(item, command, Context(self.clock(), policy, actors))
        except Exception as error:  # a value from a hook the core cannot reason about
            raise Undecidable(f"{type(error).__name__}: {describe(error)}") from error

    def _lost(
        self, holder: LeaseHolder, command: Command, policy: Policy, actors: dict[str, Any]
    ) -> None:
        """Another write came first: audit why this command no longer applies, and stop."""
        fresh = self.store.get(holder.item.id)
        if fresh is not None:
            holder.item = fresh
        again = self._decide(holder.current(), command, policy, actors)
        if again.outcome is not Outcome.REFUSED:
            again = refused(holder.current(), [Reason.STALE_VERSION])
        self.counted("refusals")
        commit(self.store, again, command=command.name, actor=self.id, now=self.clock())
        raise LeaseLost(holder.item.id)

    def _apply_reading_back(self, decision: Decision) -> bool | None:
        """``store.apply`` (through the group committer or the lockstep driver, if any), read
        back when the database goes away midway (``commit.reading_back``)."""
        write = self.store.apply if self.committer is None else self.committer.apply
        return reading_back(self.store, write, self._unavailable, decision)

    def _finishing(self, decision: Decision) -> None:
        """No hold after ``decision`` (a stop, a lease let go): its place goes to the next."""
        before, after = decision.before, decision.after
        if self.slots is None or before is None or after is None:
            return
        if after.lease_owner != self.id or not after.state.is_work:
            self.slots.finishing(before)

    def _chain(self, decision: Decision, policy: Policy) -> Decision:
        after = decision.after
        if not self.chain or after is None or after.automation not in self.automations:
            return decision
        claimed = continue_claim(after, self.id, self.clock(), policy.lease_seconds)
        return decision if claimed is None else replace(decision, after=claimed)
