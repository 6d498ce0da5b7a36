"""The scheduler: fires each automation's discovery on its schedule.

Discovery only ever inserts new keys. A key that exists already, whatever its state, is left
exactly as it is: re-discovery never resets a state, an attempt count, a proposal or a history.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..controller import utcnow
from ..core.commands import Discover
from ..core.decide import decide
from ..core.names import ACTOR, AUTOMATION, ROLE, InvalidName, lookalike, require_normal
from ..core.records import Actor
from ..core.step import Context
from ..store import Store
from .automation import App, Automation, Discovered, HookContext

log = logging.getLogger("stopline.scheduler")
MAX_KEY = 200


def new_item_id() -> str:
    return "itm_" + uuid.uuid4().hex[:20]


@dataclass
class Fired:
    automation: str
    new: int = 0
    existing: int = 0
    rejected: int = 0


class Scheduler:
    def __init__(self, store: Store, app: App, *, clock: Callable[[], datetime] = utcnow) -> None:
        self.store = store
        self.app = app
        self.clock = clock

    def register(self) -> None:
        """Store each automation's policy (CLI commands read it) and seed declared actors.

        Names are checked again here (an ``Automation`` is mutable after construction), and an
        actor to seed that looks like a registered one is refused: nothing is stored then.
        An actor is seeded only if neither the registry chain nor the table knows it: a revoked
        actor whose table row was deleted stays revoked (the table is a cache of the chain)."""
        now = self.clock()
        for automation in self.app.automations:
            require_normal(AUTOMATION, automation.name)
        known = {**self.store.actors(), **self.store.registry().actors}
        seeds = {name: roles for name, roles in self.app.actors.items() if name not in known}
        for name, roles in seeds.items():
            require_normal(ACTOR, name)
            for role in roles:
                require_normal(ROLE, role)
            similar = lookalike(name, known)
            if similar is not None:
                raise InvalidName(
                    ACTOR, name, f"actor name {name!r} looks like the registered actor {similar!r}"
                )
        for automation in self.app.automations:
            self.store.register_automation(automation.name, automation.policy, now)
        for name, roles in seeds.items():
            self.store.set_actor(
                Actor(name, frozenset(roles)),
                "add",
                {"roles": sorted(roles), "seeded_by": "app"},
                now,
            )

    def due(self, automation: Automation, now: datetime) -> bool:
        last = self.store.last_discovery(automation.name)
        return last is None or now >= last + timedelta(seconds=automation.every)

    def tick(self, *, force: bool = False) -> list[Fired]:
        now = self.clock()
        return [self.fire(a) for a in self.app.automations if force or self.due(a, now)]

    def next_fire(self) -> datetime | None:
        times = []
        for automation in self.app.automations:
            last = self.store.last_discovery(automation.name)
            times.append(
                self.clock() if last is None else last + timedelta(seconds=automation.every)
            )
        return min(times) if times else None

    def fire(self, automation: Automation) -> Fired:
        now = self.clock()
        fired = Fired(automation.name)
        ctx = HookContext(
            now,
            None,
            automation.name,
            logging.getLogger(f"stopline.automation.{automation.name}"),
            self.clock,
        )
        try:
            found = list(automation.discover(ctx))
        except Exception:
            log.exception("discovery of %s failed; nothing was written", automation.name)
            return fired
        policy = automation.policy
        for entry in found:
            d = entry if isinstance(entry, Discovered) else Discovered(str(entry))
            if not d.key or len(d.key) > MAX_KEY or "\x00" in d.key:
                fired.rejected += 1
                continue
            if self.store.find(automation.name, d.key) is not None:
                fired.existing += 1
                continue
            command = Discover(
                item_id=new_item_id(), automation=automation.name, key=d.key, input=dict(d.input)
            )
            decision = decide(None, command, Context(now, policy))
            if decision.applied and self.store.insert(decision):
                fired.new += 1
            else:
                fired.existing += 1
        self.store.set_last_discovery(automation.name, now)
        return fired
