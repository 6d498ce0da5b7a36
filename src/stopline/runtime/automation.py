"""Automations in plain Python: a name, a schedule, hooks and policies."""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..core import severity
from ..core.artifacts import Artifact
from ..core.commands import QAResult
from ..core.names import ACTOR, AUTOMATION, ROLE, InvalidName, lookalikes, require_normal
from ..core.policy import ApprovalPolicy, DeliveryPolicy, Policy, RetryPolicy
from ..core.records import Item
from ..targets.base import Target
from .outcomes import TerminalError, TransientError
from .target_names import shared_target_problem


@dataclass(frozen=True)
class Discovered:
    """One key found by discovery, with the input the item starts from."""

    key: str
    input: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class HookContext:
    """What a hook sees. ``now`` is the clock's reading when the step started."""

    now: datetime
    item: Item | None
    automation: str
    logger: logging.Logger
    clock: Callable[[], datetime]

    @property
    def input(self) -> Mapping[str, Any]:
        return self._doc("input") or {}

    @property
    def evidence(self) -> Mapping[str, Any] | None:
        ev = self._doc("evidence")
        return None if ev is None else dict(ev["data"])

    @property
    def classification(self) -> Any:
        return self._doc("classification")

    @property
    def proposal(self) -> Mapping[str, Any] | None:
        found = self._doc("proposal")
        return None if found is None else dict(found)

    @property
    def rejection(self) -> Mapping[str, Any] | None:
        """The last rejection (``reject --return``): its reason is for the next proposal."""
        found = self._doc("rejection")
        return None if found is None else dict(found)

    @property
    def corrective_input(self) -> Mapping[str, Any] | None:
        found = self._doc("corrective_input")
        return None if found is None else found["input"]

    @property
    def revision(self) -> Mapping[str, Any] | None:
        found = self._doc("revision")
        return None if found is None else dict(found)

    @property
    def idempotency_key(self) -> str:
        """A key for side effects of this step, stable across its retries."""
        assert self.item is not None
        return f"{self.item.id}:{self.item.doc('delivery_seq') or 0}:{self.item.state.value}"

    def _doc(self, name: str) -> Any:
        return None if self.item is None else self.item.doc(name)


DiscoverHook = Callable[
    [HookContext],
    Iterable[Discovered | str]
    | Awaitable[Iterable[Discovered | str]]
    | AsyncIterable[Discovered | str],
]
Hook = Callable[[HookContext], Any]
QAHook = Callable[[HookContext, Artifact], QAResult | Awaitable[QAResult]]
ReviseHook = Callable[
    [HookContext, str, Sequence[Artifact]],
    Sequence[Artifact] | Awaitable[Sequence[Artifact]],
]


def _pass_qa(ctx: HookContext, artifact: Artifact) -> QAResult:
    return QAResult(True, {"checks": "none declared"})


@dataclass
class Automation:
    """A recurring automation.

    ``every`` is the discovery interval in seconds. ``retry_on`` and ``terminal_on`` classify
    exceptions raised by hooks; anything else stops the item in ``exception``.
    ``lease_seconds`` is how long a claim of one of its items lasts without renewal (the worker
    renews it every third of that while a step runs); ``hook_timeout`` is how long the worker
    waits for one hook call before it abandons it and records ``hook_timeout`` (retried within
    the budget). A hook that needs longer declares a longer ``hook_timeout``.

    Any hook may be an ``async def`` function (``discover`` an async generator too): it runs on
    the worker's event loop, beside the other items' hooks. ``concurrency`` is the most items of
    this automation one worker process runs at once (``None``: as many as the worker's own
    ``--concurrency`` allows).

    ``max_open_items`` is the most of its items that may stand unended (in any state but
    ``completed``, ``revision_completed``, ``closed`` and ``failed``; stopped ones count):
    past it, discovery creates no new item, and the keys it held back are created by a later
    discovery that lists them once items have ended (``None``: no limit).
    """

    name: str
    discover: DiscoverHook
    observe: Hook
    propose: Hook
    execute: Hook | None = None
    qa: QAHook = _pass_qa
    revise: ReviseHook | None = None
    target: Target | None = None
    every: float = 60.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    step_retry: Mapping[str, RetryPolicy] = field(default_factory=dict)
    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    delivery: DeliveryPolicy = field(default_factory=DeliveryPolicy)
    lease_seconds: float = 30.0
    hook_timeout: float = 20.0
    retry_on: tuple[type[BaseException], ...] = (TransientError,)
    terminal_on: tuple[type[BaseException], ...] = (TerminalError,)
    description: str = ""
    severity: str | None = None  # of its proposals that name none (core/severity.py)
    concurrency: int | None = None
    max_open_items: int | None = 10_000

    def __post_init__(self) -> None:
        severity.require(self.severity, f"severity of automation {self.name!r}")
        for hook in ("observe", "propose", "execute", "qa", "revise"):
            fn = getattr(self, hook)
            call = type(fn).__call__ if fn is not None and not inspect.isroutine(fn) else None
            if fn is not None and (
                inspect.isasyncgenfunction(fn)
                or (call is not None and inspect.isasyncgenfunction(call))
            ):
                raise TypeError(
                    f"the {hook} hook of automation {self.name!r} is an async generator; a hook"
                    " returns one outcome (write it with `def` or `async def` and `return`)"
                )
        if self.concurrency is not None and (
            isinstance(self.concurrency, bool)
            or not isinstance(self.concurrency, int)
            or self.concurrency < 1
        ):
            raise ValueError(f"concurrency of {self.name} must be a whole number of at least 1")
        most = self.max_open_items
        if most is not None and (isinstance(most, bool) or not isinstance(most, int) or most < 1):
            raise ValueError(f"max_open_items of {self.name} must be a whole number of at least 1")
        # Names declared in code are refused unless already in the one normal form (see
        # core/names.py): no '/', so AUTOMATION/KEY splits at its first '/'.
        require_normal(AUTOMATION, self.name)
        for name in ("lease_seconds", "hook_timeout"):
            seconds = getattr(self, name)
            if isinstance(seconds, bool) or not isinstance(seconds, int | float):
                raise ValueError(f"{name} of {self.name} must be a number of seconds")
            if not 0 < seconds < math.inf:
                raise ValueError(f"{name} of {self.name} must be positive and finite")
        for rule in (self.approval.default, *self.approval.rules.values()):
            for role in rule.roles:
                require_normal(ROLE, role)
        for role in self.delivery.publish_roles:
            require_normal(ROLE, role)

    @property
    def policy(self) -> Policy:
        return Policy(
            retry=self.retry,
            approval=self.approval,
            delivery=self.delivery,
            lease_seconds=self.lease_seconds,
            step_retry=dict(self.step_retry),
            target=describe_target(self.target),
            revise_hook=self.revise is not None,
        )


def describe_target(target: Target | None) -> dict[str, Any]:
    describe = getattr(target, "describe", None)
    return dict(describe()) if callable(describe) else {}


@dataclass
class AgentAutomation:
    """An automation whose items AI agents propose (``stopline mcp``) and, once approved,
    carry out themselves: no hooks, no worker. Its policies are those of any automation: who
    must approve which action, how fresh the evidence must be, the retry budget of each step
    an agent takes (counted when the agent takes the step, as a worker's claim is)."""

    name: str
    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    step_retry: Mapping[str, RetryPolicy] = field(default_factory=dict)
    # how long an agent holds a step it took (``begin_action``) before it may be taken again
    lease_seconds: float = 600.0
    description: str = ""

    def __post_init__(self) -> None:
        require_normal(AUTOMATION, self.name)
        seconds = self.lease_seconds
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise ValueError(f"lease_seconds of {self.name} must be a number of seconds")
        if not 0 < seconds < math.inf:
            raise ValueError(f"lease_seconds of {self.name} must be positive and finite")
        for rule in (self.approval.default, *self.approval.rules.values()):
            for role in rule.roles:
                require_normal(ROLE, role)

    @property
    def policy(self) -> Policy:
        return Policy(
            retry=self.retry,
            approval=self.approval,
            delivery=DeliveryPolicy(revisable=False),
            lease_seconds=self.lease_seconds,
            step_retry=dict(self.step_retry),
            agent=True,
        )


@dataclass
class App:
    """A set of automations that ``stopline run`` serves, and the automations whose items
    agents propose (``agents``: registered by ``stopline run`` and ``stopline mcp``; no
    worker runs them)."""

    automations: list[Automation]
    actors: Mapping[str, Sequence[str]] = field(default_factory=dict)  # seeded if missing
    agents: list[AgentAutomation] = field(default_factory=list)

    def __post_init__(self) -> None:
        every: list[Automation | AgentAutomation] = [*self.automations, *self.agents]
        names = [require_normal(AUTOMATION, a.name) for a in every]
        if len(set(names)) != len(names):
            raise ValueError("automation names must be unique")
        for name, roles in self.actors.items():
            require_normal(ACTOR, name)
            if isinstance(roles, str):
                raise ValueError(f"the roles of actor {name!r} are a list, not the text {roles!r}")
            for role in roles:
                require_normal(ROLE, role)
        targets = {a.name: a.target for a in self.automations if a.target is not None}
        shared = shared_target_problem(targets)
        if shared:
            raise ValueError(shared)
        similar = lookalikes(self.actors)
        if similar:
            a, b = similar[0]
            raise InvalidName(ACTOR, b, f"actor names {a!r} and {b!r} look alike; rename one")

    def by_name(self) -> dict[str, Automation]:
        return {a.name: a for a in self.automations}

    def policies(self) -> dict[str, Policy]:
        """The policy of every automation and agent automation, by name (what is stored)."""
        every: list[Automation | AgentAutomation] = [*self.automations, *self.agents]
        return {a.name: a.policy for a in every}
