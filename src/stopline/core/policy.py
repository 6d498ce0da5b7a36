"""Policies an automation declares, in the serialisable form the core reasons with.

Everything here is data: the runtime stores an automation's policy in the database, so a CLI
command run without the automation's code still sees the same rules. The ``version`` of a
policy is the digest of its plain form; approvals record the version they were given under.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from typing import Any

from .canonical import digest
from .legacy_form import digest_forms

# The most a retry policy may say: attempts (and a resume's grant) the store's attempt count
# holds, and a wait that a time after now can hold (a year).
MAX_COUNT = 2**31 - 1
MAX_DELAY = 366 * 24 * 3600.0


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how soon a failing step is tried again.

    ``max_attempts`` counts every claim of the step, including one whose worker died.
    The delay before attempt ``n + 1`` is ``min(base_delay * backoff ** (n - 1), max_delay)``,
    spread by up to ``jitter`` of itself (a fraction; the sample is drawn by the worker and
    passed in). ``resume_cap`` is the most attempts an operator's ``resume`` may grant.
    """

    max_attempts: int = 3
    base_delay: float = 1.0
    backoff: float = 2.0
    max_delay: float = 300.0
    jitter: float = 0.0
    resume_cap: int = 10

    def __post_init__(self) -> None:
        if not 1 <= self.max_attempts <= MAX_COUNT:
            raise ValueError(f"max_attempts must be between 1 and {MAX_COUNT}")
        if not (0 <= self.base_delay < math.inf and 0 <= self.max_delay <= MAX_DELAY):
            raise ValueError(f"delays must be finite, >= 0, and max_delay at most {MAX_DELAY:g} s")
        if not 1 <= self.backoff < math.inf:
            raise ValueError("backoff must be finite and >= 1")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter is a fraction between 0 and 1")
        if not 1 <= self.resume_cap <= MAX_COUNT:
            raise ValueError(f"resume_cap must be between 1 and {MAX_COUNT}")
        # One canonical form, so a policy read back from the database has the same version.
        for name in ("base_delay", "backoff", "max_delay", "jitter"):
            object.__setattr__(self, name, float(getattr(self, name)))
        for name in ("max_attempts", "resume_cap"):
            object.__setattr__(self, name, int(getattr(self, name)))

    def delay(self, attempt: int, jitter_sample: float = 0.0) -> timedelta:
        """The wait after failed attempt number ``attempt`` (1-based)."""
        try:
            grown = self.base_delay * self.backoff ** max(attempt - 1, 0)
        except OverflowError:  # thousands of doublings: far past any max_delay
            grown = math.inf
        base = min(grown, self.max_delay)
        spread = base * self.jitter * min(max(jitter_sample, 0.0), 1.0)
        return timedelta(seconds=base + spread)

    def to_plain(self) -> dict[str, Any]:
        return {
            "max_attempts": self.max_attempts,
            "base_delay": self.base_delay,
            "backoff": self.backoff,
            "max_delay": self.max_delay,
            "jitter": self.jitter,
            "resume_cap": self.resume_cap,
        }

    @classmethod
    def from_plain(cls, doc: Mapping[str, Any]) -> RetryPolicy:
        return cls(**dict(doc))


@dataclass(frozen=True)
class ApprovalRule:
    """Who must approve one kind of action, and on how fresh evidence.

    ``approvals`` distinct actors, each holding one of ``roles``, must approve the same
    proposal digest while its evidence is younger than ``max_evidence_age`` seconds. With
    ``separation_of_duties`` the proposer, every editor, and everyone whose ``reject --return``
    reason the proposal answers may not approve it (``returners_may_approve=True`` lets the
    last group approve). ``approvals=0`` means the action needs no approval at all.
    """

    roles: tuple[str, ...] = ("approver",)
    approvals: int = 1
    max_evidence_age: float = 3600.0
    separation_of_duties: bool = True
    returners_may_approve: bool = False

    def __post_init__(self) -> None:
        if self.approvals < 0:
            raise ValueError("approvals must be >= 0")
        if self.approvals > 0 and not self.roles:
            raise ValueError("an action that needs approval needs at least one role")
        if self.max_evidence_age <= 0:
            raise ValueError("max_evidence_age must be positive")
        # One canonical form: 3600 and 3600.0 are the same policy (and the same version).
        object.__setattr__(self, "max_evidence_age", float(self.max_evidence_age))
        object.__setattr__(self, "approvals", int(self.approvals))
        object.__setattr__(self, "roles", tuple(self.roles))

    def to_plain(self) -> dict[str, Any]:
        plain: dict[str, Any] = {
            "roles": sorted(self.roles),
            "approvals": self.approvals,
            "max_evidence_age": self.max_evidence_age,
            "separation_of_duties": self.separation_of_duties,
        }
        if self.returners_may_approve:  # only when set: the versions of other policies stay
            plain["returners_may_approve"] = True
        return plain

    @classmethod
    def from_plain(cls, doc: Mapping[str, Any]) -> ApprovalRule:
        return cls(
            roles=tuple(doc["roles"]),
            approvals=int(doc["approvals"]),
            max_evidence_age=float(doc["max_evidence_age"]),
            separation_of_duties=bool(doc["separation_of_duties"]),
            returners_may_approve=bool(doc.get("returners_may_approve", False)),
        )


@dataclass(frozen=True)
class ApprovalPolicy:
    """Approval rules by action kind. An action without a rule uses ``default``."""

    rules: Mapping[str, ApprovalRule] = field(default_factory=dict)
    default: ApprovalRule = field(default_factory=ApprovalRule)

    def rule(self, action: str) -> ApprovalRule:
        return self.rules.get(action, self.default)

    def to_plain(self) -> dict[str, Any]:
        return {
            "rules": {k: v.to_plain() for k, v in sorted(self.rules.items())},
            "default": self.default.to_plain(),
        }

    @cached_property
    def version(self) -> str:
        return digest(self.to_plain())[:16]

    @cached_property
    def versions(self) -> frozenset[str]:
        """Every name this policy has had: its version, and the one written before digests
        followed RFC 8785 (proposals made then record that one)."""
        return frozenset(d[:16] for d in digest_forms(self.to_plain()))

    @classmethod
    def from_plain(cls, doc: Mapping[str, Any]) -> ApprovalPolicy:
        return cls(
            rules={k: ApprovalRule.from_plain(v) for k, v in doc["rules"].items()},
            default=ApprovalRule.from_plain(doc["default"]),
        )


DRAFT = "draft"
PUBLISH = "publish"


@dataclass(frozen=True)
class DeliveryPolicy:
    """``draft``: stopline never publishes. ``publish``: publication is an approvable action
    after the review packet is approved. ``revisable``: completed deliveries may be revised
    while unpublished."""

    mode: str = DRAFT
    revisable: bool = True
    publish_roles: tuple[str, ...] = ("publisher",)

    def __post_init__(self) -> None:
        if self.mode not in (DRAFT, PUBLISH):
            raise ValueError(f"delivery mode must be {DRAFT!r} or {PUBLISH!r}")

    def to_plain(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "revisable": self.revisable,
            "publish_roles": sorted(self.publish_roles),
        }

    @classmethod
    def from_plain(cls, doc: Mapping[str, Any]) -> DeliveryPolicy:
        return cls(doc["mode"], bool(doc["revisable"]), tuple(doc["publish_roles"]))


@dataclass(frozen=True)
class Policy:
    """Everything the core needs to know about one automation."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    delivery: DeliveryPolicy = field(default_factory=DeliveryPolicy)
    lease_seconds: float = 30.0
    step_retry: Mapping[str, RetryPolicy] = field(default_factory=dict)
    # Where deliveries go, as plain data (``{"kind": "directory", "root": ...}``), so that
    # ``reconcile`` and ``publish`` can reach the target without the automation's code.
    target: Mapping[str, Any] = field(default_factory=dict)
    # Whether the automation declares a ``revise`` hook, so that ``stopline revise`` (run
    # without the automation's code) refuses a revision no worker could carry out. Outside
    # ``approval``: it is part of ``version`` but not of the approval policy's version.
    revise_hook: bool = False
    # Whether AI agents propose this automation's items (``stopline mcp``) and carry out what
    # is approved themselves: no worker runs its items, and each item belongs to its agent.
    agent: bool = False

    def __post_init__(self) -> None:
        if self.lease_seconds <= 0:
            raise ValueError("lease_seconds must be positive")
        object.__setattr__(self, "lease_seconds", float(self.lease_seconds))

    def retry_for(self, state: str) -> RetryPolicy:
        """The retry policy of one step (work state): its override, else the automation's."""
        return self.step_retry.get(state, self.retry)

    def to_plain(self) -> dict[str, Any]:
        return {
            "step_retry": {k: v.to_plain() for k, v in sorted(self.step_retry.items())},
            "target": dict(self.target),
            "retry": self.retry.to_plain(),
            "approval": self.approval.to_plain(),
            "delivery": self.delivery.to_plain(),
            "lease_seconds": self.lease_seconds,
            "revise_hook": self.revise_hook,
        } | ({"agent": True} if self.agent else {})  # absent when off: other versions stay

    @cached_property
    def version(self) -> str:
        return digest(self.to_plain())[:16]

    @classmethod
    def from_plain(cls, doc: Mapping[str, Any]) -> Policy:
        return cls(
            retry=RetryPolicy.from_plain(doc["retry"]),
            approval=ApprovalPolicy.from_plain(doc["approval"]),
            delivery=DeliveryPolicy.from_plain(doc["delivery"]),
            lease_seconds=float(doc["lease_seconds"]),
            step_retry={k: RetryPolicy.from_plain(v) for k, v in doc.get("step_retry", {}).items()},
            target=dict(doc.get("target", {})),
            # A policy stored before this field existed says nothing about the hook: read as
            # absent (fail closed); the next `stopline run` stores the policy again.
            revise_hook=doc.get("revise_hook") is True,
            agent=doc.get("agent") is True,
        )
