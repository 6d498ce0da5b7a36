"""Helpers for the core tests: a fake clock, a claim emulation, and a harness that drives one item
through ``decide()`` with the real commands, applying every decision as the store would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from stopline.core.artifacts import Artifact
from stopline.core.canonical import format_time
from stopline.core.commands import (
    Approve,
    Bind,
    Command,
    Delivered,
    Discover,
    Execute,
    Expire,
    Failure,
    Guard,
    Intent,
    NeedsEyes,
    Observe,
    Observed,
    Propose,
    QAResult,
    ReadBack,
    Report,
    Revise,
    Stage,
)
from stopline.core.decide import decide
from stopline.core.decision import Decision, Outcome
from stopline.core.integrity import Finding, head_findings
from stopline.core.policy import ApprovalPolicy, ApprovalRule, Policy
from stopline.core.records import Actor, Event, Item
from stopline.core.states import State
from stopline.core.step import Context
from stopline.core.verify import verify_item

T0 = datetime(2026, 3, 1, 12, 0, 0, 250000, tzinfo=UTC)
LEASE = timedelta(seconds=30)
S = State

OPERATOR = "operator"
APPROVER = "approver"
PUBLISHER = "publisher"

# The proposer the core records for every proposal of automation "auto".
AUTOMATION_PROPOSER = "automation:auto"


def actors(*extra: Actor) -> dict[str, Actor]:
    """The actor registry most tests use (plus ``extra``)."""
    base = [
        Actor("olivia", frozenset({OPERATOR})),
        Actor("alice", frozenset({APPROVER})),
        Actor("bob", frozenset({APPROVER})),
        Actor("carol", frozenset({APPROVER, OPERATOR})),
        Actor("nora", frozenset()),  # known, holds no role
        Actor("pat", frozenset({PUBLISHER, OPERATOR})),
        Actor("gone", frozenset({OPERATOR, APPROVER}), active=False),  # revoked
        Actor(AUTOMATION_PROPOSER, frozenset({APPROVER})),  # a name equal to the proposer
        *extra,
    ]
    return {a.name: a for a in base}


def policy(
    *,
    approvals: int = 1,
    roles: tuple[str, ...] = (APPROVER,),
    max_evidence_age: float = 3600.0,
    separation_of_duties: bool = True,
    **kwargs: Any,
) -> Policy:
    rule = ApprovalRule(roles, approvals, max_evidence_age, separation_of_duties)
    kwargs.setdefault("revise_hook", True)  # the automation declares a revise hook
    return Policy(approval=ApprovalPolicy(default=rule), **kwargs)


class Clock:
    """A fake clock: time moves only when a test says so."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float = 0.0) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


def claimable(item: Item, now: datetime) -> list[str]:
    """Why the store's claim would not take ``item`` now (empty: it would)."""
    why = []
    if not item.state.is_work:
        why.append("not a work state")
    if item.next_eligible_at > now:
        why.append("not due")
    if item.lease_owner is not None and item.lease_live(now):
        why.append("leased")
    if item.attempts >= item.max_attempts:
        why.append("budget spent")
    if item.state is S.REVISION_PREPARED and item.lease_owner is not None:
        why.append("revision lease expired: only the sweeper may move it")
    return why


def claim(item: Item, worker: str, now: datetime, lease: timedelta = LEASE) -> Item:
    """Emulate the store's one-statement claim (``queries.sql``, ``claim``).

    Counts the attempt, fences the lease with a new token, bumps the version, and logs an
    abandoned attempt when an expired lease is taken over, as the store does.
    """
    log = item.attempt_log
    if item.lease_owner is not None:
        log = (
            *log,
            {
                "attempt": item.attempts,
                "state": item.state.value,
                "claimed_at": None if item.claimed_at is None else format_time(item.claimed_at),
                "at": format_time(now),
                "worker": item.lease_owner,
                "class": "lease_expired",
                "message": "the lease expired before the worker recorded an outcome",
                "outcome": "abandoned",
            },
        )
    return replace(
        item,
        attempts=item.attempts + 1,
        lease_owner=worker,
        lease_token=item.lease_token + 1,
        lease_expires_at=now + lease,
        claimed_at=now,
        version=item.version + 1,
        attempt_log=log,
    )


def art(key: str, body: str = "body", title: str | None = None) -> Artifact:
    return Artifact(key, title or f"title {key}", f"summary {key}", body)


def passed(*artifacts: Artifact) -> dict[str, QAResult]:
    return {a.key: QAResult(True, {"checked": a.key}) for a in artifacts}


def rid(key: str) -> str:
    return f"remote-{key}"


@dataclass
class Harness:
    """One item, its event log, a clock, a policy and an actor registry.

    ``apply`` is the store: an applied decision replaces the item and appends its event; a
    refused or zero-write decision changes nothing. Every applied decision is checked against
    the invariants every write must keep (one event, chained, version + 1, replay sound).
    """

    policy: Policy = field(default_factory=policy)
    actors: dict[str, Actor] = field(default_factory=actors)
    clock: Clock = field(default_factory=Clock)
    item: Item | None = None
    events: list[Event] = field(default_factory=list)
    item_id: str = "auto-k1"

    # --- the store ---------------------------------------------------------------------------

    def ctx(self) -> Context:
        return Context(self.clock.now, self.policy, self.actors)

    @property
    def it(self) -> Item:
        assert self.item is not None
        return self.item

    @property
    def state(self) -> State:
        return self.it.state

    def decide(self, command: Command) -> Decision:
        if isinstance(command, Expire | Guard) and command.head is None and self.events:
            command = replace(command, head=self.events[-1])  # what the sweeper/worker loads
        return decide(self.item, command, self.ctx())

    def apply(self, command: Command) -> Decision:
        before = self.item
        decision = self.decide(command)
        if decision.outcome is Outcome.APPLIED:
            assert decision.after is not None and decision.event is not None
            assert decision.event.seq == len(self.events) + 1
            assert decision.event.prev_hash == (self.events[-1].hash if self.events else "")
            assert decision.event.hash == decision.event.computed_hash()
            assert decision.after.version == (1 if before is None else before.version + 1)
            self.item = decision.after
            self.events.append(decision.event)
            assert verify_item(self.item, self.events) == []
            assert head_findings(self.item, decision.event) == [], "every write is sealed"
        else:
            assert decision.after is None and decision.event is None
            assert decision.sequence is None
            assert self.item is before
        return decision

    def ok(self, command: Command, state: State | None = None) -> Decision:
        """Apply ``command``; it must be applied (and land in ``state`` if given)."""
        decision = self.apply(command)
        assert decision.outcome is Outcome.APPLIED, (command, decision.reasons)
        if state is not None:
            assert decision.state is state and self.state is state
        return decision

    def refused(self, command: Command, *reasons: str) -> Decision:
        """``command`` must be refused with exactly ``reasons`` (order-insensitive)."""
        before = self.item
        decision = self.apply(command)
        assert decision.outcome is Outcome.REFUSED, decision
        assert set(decision.reasons) == set(reasons), decision.reasons
        assert self.item is before
        return decision

    # --- workers -------------------------------------------------------------------------------

    def claim(self, worker: str = "w1", *, force: bool = False) -> Item:
        if not force:
            why = claimable(self.it, self.clock.now)
            assert not why, why
        self.item = claim(self.it, worker, self.clock.now)
        return self.item

    def lease(self) -> dict[str, Any]:
        """The worker fields of a command committed under the current lease."""
        assert self.it.lease_owner is not None
        return {"worker": self.it.lease_owner, "token": self.it.lease_token}

    def drive(self, *steps: Command | Callable[[dict[str, Any]], Command]) -> list[Decision]:
        """Apply ``steps`` in order; every one must be applied.

        A step is a command, or a function of the lease fields (``worker``, ``token``) that
        builds a worker command: the item is claimed by hand first unless a live lease is held.
        """
        decisions = []
        for step in steps:
            if callable(step) and not isinstance(step, Command):
                if not self.it.lease_live(self.now):
                    self.claim()
                step = step(self.lease())
            decisions.append(self.ok(step))
        return decisions

    # --- walks through the real commands ------------------------------------------------------

    def discover(self, data: Mapping[str, Any] | None = None) -> Item:
        self.ok(Discover(self.item_id, "auto", "k1", dict(data or {"n": 1})), S.OBSERVING)
        return self.it

    def observe(self, evidence: Mapping[str, Any] | None = None) -> Item:
        self.claim()
        self.ok(
            Observe(**self.lease(), evidence=dict(evidence or {"cpu": 97}), observed_at=self.now),
            S.CLASSIFIED,
        )
        return self.it

    def propose(self, params: Mapping[str, Any] | None = None, action: str = "restart") -> Item:
        self.claim()
        self.ok(
            Propose(
                **self.lease(),
                action=action,
                target="web-1",
                params=dict(params or {"grace": 5}),
                rationale="cpu pegged",
            )
        )
        return self.it

    def report(self) -> Item:
        self.claim()
        self.ok(Report(**self.lease(), report={"summary": "nothing to do"}), S.READY_FOR_REVIEW)
        return self.it

    def to_awaiting(self) -> Item:
        self.discover()
        self.observe()
        self.propose()
        assert self.state is S.AWAITING_APPROVAL
        return self.it

    def digest(self) -> str:
        return str(self.it.doc("proposal")["digest"])

    def approve(self, *names: str) -> Item:
        for name in names:
            self.ok(Approve(name, self.digest()))
        return self.it

    def to_approved(self) -> Item:
        self.to_awaiting()
        rule = self.policy.approval.default
        self.approve(*["alice", "bob", "carol"][: rule.approvals])
        assert self.state is S.APPROVED
        return self.it

    def execute(self) -> Decision:
        self.claim()
        return self.ok(Execute(**self.lease()))

    def stage(self, artifacts: Iterable[Artifact], *, qa: Mapping[str, QAResult] | None = None):
        arts = tuple(artifacts)
        return self.apply(Stage(**self.lease(), artifacts=arts, qa=dict(qa or passed(*arts))))

    def write(self, key: str, operation: str = "create", remote_id: str | None = None) -> None:
        """Intent then bind of one artifact, as the worker commits them."""
        self.ok(Intent(**self.lease(), key=key, operation=operation, idempotency_key=f"ik-{key}"))
        self.ok(
            Bind(
                **self.lease(),
                key=key,
                operation=operation,
                remote_id=remote_id or rid(key),
                remote_version="v1",
            )
        )

    def readbacks(self, keys: Iterable[str] | None = None) -> dict[str, Observed]:
        """Readbacks that match what each artifact holds now."""
        records = {a["key"]: a for a in self.it.doc("artifacts") or ()}
        return {
            k: Observed(records[k]["content_hash"], "v2")
            for k in (records if keys is None else keys)
        }

    def to_pending_readback(self, artifacts: Iterable[Artifact] = ()) -> Item:
        arts = tuple(artifacts) or (art("a"),)
        self.to_approved()
        self.execute()
        assert self.state is S.DELIVERING
        self.claim()
        assert self.stage(arts).state is S.DELIVERING
        for a in arts:
            self.write(a.key)
        self.ok(Delivered(**self.lease()), S.PENDING_READBACK)
        return self.it

    def to_completed(self, artifacts: Iterable[Artifact] = ()) -> Item:
        self.to_pending_readback(artifacts)
        self.claim()
        self.ok(ReadBack(**self.lease(), readbacks=self.readbacks()), S.COMPLETED)
        return self.it

    def to_ready_for_review(self) -> Item:
        self.discover()
        self.observe()
        return self.report()

    def to_exception(self) -> Item:
        self.discover()
        self.observe()
        self.claim()
        self.ok(NeedsEyes(**self.lease(), owner="ops", why="ambiguous"), S.EXCEPTION)
        return self.it

    def fail_until_exhausted(self) -> Item:
        """Claim and fail retryably, waiting out each delay, until the budget is spent."""
        while self.state is not S.EXHAUSTED:
            self.clock.now = max(self.now, self.it.next_eligible_at)
            self.claim()
            self.ok(Failure(**self.lease(), failure_class="net", message="down", retryable=True))
        return self.it

    def to_exhausted(self) -> Item:
        self.discover()
        self.observe()
        return self.fail_until_exhausted()

    def to_revision_failed(self) -> Item:
        self.to_completed()
        self.revise("a")
        self.claim()
        self.ok(
            Failure(**self.lease(), failure_class="boom", message="x", retryable=False),
            S.REVISION_FAILED,
        )
        return self.it

    def to(self, state: State) -> Item:
        """Drive a fresh harness into ``state`` through the real commands."""
        walks = {
            S.OBSERVING: self.discover,
            S.CLASSIFIED: lambda: (self.discover(), self.observe())[-1],
            S.AWAITING_APPROVAL: self.to_awaiting,
            S.APPROVED: self.to_approved,
            S.PENDING_READBACK: self.to_pending_readback,
            S.READY_FOR_REVIEW: self.to_ready_for_review,
            S.EXCEPTION: self.to_exception,
            S.EXHAUSTED: self.to_exhausted,
            S.REVISION_FAILED: self.to_revision_failed,
            S.COMPLETED: self.to_completed,
            S.REVISION_PREPARED: lambda: (self.to_completed(), self.revise("a"))[-1],
        }
        item = walks[state]()
        assert item.state is state
        return item

    def packet(self) -> str:
        return str(self.it.doc("review_packet")["digest"])

    def revise(self, *keys: str, reason: str = "clearer writing", actor: str = "olivia") -> Item:
        self.ok(Revise(actor, reason, tuple(keys)), S.REVISION_PREPARED)
        return self.it

    @property
    def now(self) -> datetime:
        return self.clock.now


def unchanged(before: Item, decision: Decision) -> bool:
    """A decision that writes nothing: no ``after``, no event, no sequence."""
    return (
        decision.after is None
        and decision.event is None
        and decision.sequence is None
        and decision.before is before
    )


def bound_digests(event: Any) -> dict[str, Any]:
    """What an event is bound to, without the seal every event carries."""
    return {k: v for k, v in event.digests.items() if k != "seal"}


# --- edits behind the store --------------------------------------------------------------------


def revoke(h: Harness, name: str) -> None:
    h.actors[name] = replace(h.actors[name], active=False)


def resealed(record: Any, **changes: Any) -> Any:
    """An event or a ledger entry changed and hashed again, as a writer who can compute the
    hash would leave it."""
    changed = replace(record, **changes)
    return replace(changed, hash=changed.computed_hash())


def with_proposal(item: Item, **changes: Any) -> Item:
    """``item`` with fields of its proposal replaced behind the store."""
    return replace(item, data=item.with_data(proposal={**item.doc("proposal"), **changes}))


def reasons_of(findings: Iterable[Finding]) -> set[str]:
    return {f.reason for f in findings}
