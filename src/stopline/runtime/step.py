"""One claimed step of one item: what the parts of a step share, and the steps that run one
hook (``observe``, ``propose``) or re-check authority (``execute``).

Which code runs is chosen by the item's state (:data:`STEPS`); the delivery and revision
steps are in ``delivery_driver.py``. A step ends with one commit, or several at the durable
boundaries of a delivery; it never writes anything but through ``Worker.commit``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.commands import Command, Execute
from ..core.decision import Decision, Outcome
from ..core.failures import INVALID_OUTPUT
from ..core.reasons import Reason
from ..core.records import Item, private_item
from ..core.states import State
from . import delivery_driver
from .automation import Automation, HookContext
from .hooks import HookFailed, call_hook, describe, safe_text
from .lease import LeaseHolder, LeaseLost
from .outcome_table import Signature, command_for, failure

if TYPE_CHECKING:
    from .worker import Worker


class Step:
    """The worker, the automation and the lease of one claimed step."""

    def __init__(self, worker: Worker, automation: Automation, holder: LeaseHolder) -> None:
        self.worker = worker
        self.automation = automation
        self.holder = holder

    @property
    def item(self) -> Item:
        return self.holder.item

    def run(self) -> None:
        run_step = STEPS.get(self.item.state)
        if run_step is None:  # a claim only returns work states; fail closed all the same
            raise LeaseLost(self.item.id)
        run_step(self)

    # --- what every part of a step uses ------------------------------------------------------

    def signature(self) -> Signature:
        return Signature(
            self.worker.id,
            self.item.lease_token,
            self.worker.clock(),
            self.worker.rng,
            self.automation.severity,
        )

    def context(self) -> HookContext:
        return HookContext(
            now=self.worker.clock(),
            item=private_item(self.item),
            automation=self.automation.name,
            logger=logging.getLogger(f"stopline.automation.{self.automation.name}"),
            clock=self.worker.clock,
        )

    def call(self, name: str, hook: Callable[..., Any], *args: Any) -> Any:
        """Run a hook: its outcome, or a ``HookFailed`` for anything it raised or caused."""
        runner = self.worker.hook_runner()
        late = self.worker.hand_over(self.holder)
        return call_hook(
            runner, self.automation, name, hook, self.context(), *args, on_timeout=late
        )

    def commit(self, command: Command) -> Decision:
        return self.worker.commit(self.holder, command)

    def guard(self) -> bool:
        """Before an acting call: ``True`` to go ahead (see ``Worker.guard``)."""
        return self.worker.guard(self.holder)

    def crash_point(self, name: str) -> None:
        self.worker.crash_point(name)

    def fail(self, failure_class: str, message: str, retryable: bool | None = None) -> Decision:
        """Record a failure of this step; what it does is the core's rule for its class."""
        text = safe_text(message)
        return self.commit(failure(failure_class, text, self.signature(), retryable=retryable))

    def record(self, failed: HookFailed) -> Decision:
        """Record a hook's failure as the step that called it does (taken over: ``watchdog.py``)."""
        return self.fail(failed.failure_class, failed.message, failed.retryable)

    def commit_outcome(self, hook: str, outcome: Any) -> Decision:
        """Commit what ``hook`` returned, through the outcome table."""
        try:
            command = command_for(hook, outcome, self.signature())
        except Exception as error:  # a value the shape checks let through
            why = f"the {hook} hook's output cannot be recorded: {describe(error)}"
            return self.fail(INVALID_OUTPUT, why)
        return self.commit_from_hook(hook, command)

    def commit_from_hook(self, hook: str, command: Command) -> Decision:
        """Commit a command made of ``hook``'s output; ``invalid_output`` when the core
        refuses it as ``invalid_input`` or cannot reason about it."""
        try:
            decision = self.commit(command)
        except Undecidable as error:
            why = f"the {hook} hook's output cannot be recorded: {error}"
            return self.fail(INVALID_OUTPUT, why)
        if decision.outcome is Outcome.REFUSED and Reason.INVALID_INPUT in decision.reasons:
            why = f"the {hook} hook's output was refused: {', '.join(decision.reasons)}"
            return self.fail(INVALID_OUTPUT, why)
        return decision


class Undecidable(Exception):
    """``decide()`` raised on a command (a value from a hook it cannot reason about)."""


def observe(step: Step) -> None:
    step.commit_outcome("observe", step.call("observe", step.automation.observe))


def propose(step: Step) -> None:
    step.commit_outcome("propose", step.call("propose", step.automation.propose))


def execute(step: Step) -> None:
    """``approved``: authority re-checked just before the action, then ``delivering``."""
    if not step.guard():
        return
    decision = step.commit(Execute(**step.signature().lease()))
    if decision.applied and decision.state is State.DELIVERING:
        step.crash_point("executed")


STEPS: dict[State, Callable[[Step], None]] = {
    State.OBSERVING: observe,
    State.CLASSIFIED: propose,
    State.APPROVED: execute,
    State.DELIVERING: delivery_driver.deliver,
    State.PENDING_READBACK: delivery_driver.read_back,
    State.REVISION_PREPARED: delivery_driver.revise,
}
