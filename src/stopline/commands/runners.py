"""How a built command reaches ``decide()``: directly, or after the IO it needs.

Most commands go straight to :meth:`Controller.run`. ``publish`` and ``reconcile`` first talk
to the automation's target (:mod:`stopline.runtime.operations`); what they find goes to the
core as the command, so the rules stay in ``decide()``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.commands import Command, Publish, Reconcile
from ..core.decision import Decision

if TYPE_CHECKING:
    from ..controller import Controller


@dataclass(frozen=True)
class RunOptions:
    idempotency_key: str | None = None
    app_spec: str | None = None  # where a runner that needs the target finds the automations


@dataclass(frozen=True)
class Runner:
    run: Callable[[Controller, str, Command, RunOptions], Decision]
    needs_target: bool = False  # it does target IO first (the CLI takes ``--app``)


def _decide(controller: Controller, ref: str, command: Command, options: RunOptions) -> Decision:
    return controller.run(ref, command, idempotency_key=options.idempotency_key)


def _publish(controller: Controller, ref: str, command: Command, options: RunOptions) -> Decision:
    from ..runtime.operations import publish  # the targets load only when they are needed

    if not isinstance(command, Publish):
        raise TypeError(f"the publish runner got {command.name}")
    return publish(
        controller,
        ref,
        packet=command.packet,
        actor=command.actor,
        app_spec=options.app_spec,
        idempotency_key=options.idempotency_key,
    )


def _reconcile(controller: Controller, ref: str, command: Command, options: RunOptions) -> Decision:
    from ..runtime.operations import reconcile

    if not isinstance(command, Reconcile):
        raise TypeError(f"the reconcile runner got {command.name}")
    return reconcile(
        controller,
        ref,
        key=command.key,
        actor=command.actor,
        app_spec=options.app_spec,
        idempotency_key=options.idempotency_key,
    )


DECIDE = Runner(_decide)
PUBLISH_ON_TARGET = Runner(_publish, needs_target=True)
RECONCILE_ON_TARGET = Runner(_reconcile, needs_target=True)
