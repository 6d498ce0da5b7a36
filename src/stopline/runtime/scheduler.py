"""The scheduler: fires each automation's discovery on its schedule.

Discovery only ever inserts new keys. A key that exists already, whatever its state, is left
exactly as it is: re-discovery never resets a state, an attempt count, a proposal or a history.

Every store call goes through :class:`~stopline.runtime.retrying.Reconnect`. Keys are inserted
one by one, each in its own retried check-then-insert: a connection lost in the middle of a
discovery loses no key and doubles none, and the discovery hook is not run again.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..clock import utcnow
from ..core.commands import Discover
from ..core.decide import decide
from ..core.failures import HOOK_TIMEOUT
from ..core.limits import DEFAULT, MAX_ITEM_KEY, item_key_problem
from ..core.names import ACTOR, AUTOMATION, ROLE, InvalidName, lookalike, require_normal
from ..core.records import Actor
from ..core.step import Context
from ..store import Store
from .automation import App, Automation, Discovered, HookContext
from .clock_check import MAX_SKEW
from .commit import Committed, commit
from .creating import Creation
from .discovering import DiscoveryFailed, list_discovered
from .hook_output import limit_violations, plain_value
from .hooks import HookRunner, HookTimeout
from .retrying import Reconnect
from .watch import HookFailures

log = logging.getLogger("stopline.scheduler")
MAX_KEY = MAX_ITEM_KEY
MAX_DISCOVERED = DEFAULT.max_members  # entries one discovery may list: one document's array
SCHEDULER = "scheduler"  # who the audit names for a refused discovery
FUTURE_SKEW = timedelta(seconds=MAX_SKEW)  # a last discovery later than now by more is untrue


def new_item_id() -> str:
    return "itm_" + uuid.uuid4().hex[:20]


@dataclass
class Fired:
    automation: str
    new: int = 0
    existing: int = 0
    rejected: int = 0
    held_back: int = 0  # new keys not created: the automation's max_open_items were open
    failure: str | None = None  # the hook raised (its class) or ran past its time (hook_timeout)


class Scheduler:
    def __init__(
        self,
        store: Store,
        app: App,
        *,
        clock: Callable[[], datetime] = utcnow,
        reconnect: Reconnect | None = None,
        failures: HookFailures | None = None,
    ) -> None:
        """``failures``: where a discovery past its time is counted (``stopline run`` exits 4;
        one that raised is counted by the hook's own wrapper, ``watch.py``)."""
        self.failures = failures
        self.store = store
        self.app = app
        self.clock = clock
        self.reconnect = reconnect or Reconnect()
        self.creation = Creation(store, self.reconnect, self._insert)
        self.hooks = HookRunner()  # discovery runs off this thread, within its hook_timeout

    def register(self) -> None:
        """Store each automation's policy (CLI commands read it) and seed declared actors.

        Names are checked again here (an ``Automation`` is mutable after construction), and an
        actor to seed that looks like a registered one is refused: nothing is stored then.
        An actor is seeded only if neither the registry chain nor the table knows it: a revoked
        actor whose table row was deleted stays revoked (the table is a cache of the chain)."""
        now = self.clock()
        for name in self.app.policies():
            require_normal(AUTOMATION, name)
        known = self.reconnect.call(
            "reading the actors",
            lambda: {**self.store.actors(), **self.store.registry().actors},
        )
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
        for name, policy in self.app.policies().items():
            self.reconnect.call(
                f"registering automation {name}",
                self.store.register_automation,
                name,
                policy,
                now,
            )
        for name, roles in seeds.items():
            self.reconnect.call(f"seeding actor {name}", self._seed_actor, name, roles, now)

    def _seed_actor(self, name: str, roles: Sequence[str], now: datetime) -> None:
        """Add ``name`` unless it exists: run again after a lost reply, the check reads back
        the actor the first run added, so its audit event is written once."""
        if name not in self.store.actors():
            self.store.set_actor(
                Actor(name, frozenset(roles)),
                "add",
                {"roles": sorted(roles), "seeded_by": "app"},
                now,
            )

    def _last_discovery(self, automation: Automation) -> datetime | None:
        return self.reconnect.call(
            f"reading the schedule of {automation.name}",
            self.store.last_discovery,
            automation.name,
        )

    def _last_run(self, automation: Automation, now: datetime) -> datetime | None:
        """When the automation's discovery last ran; ``None`` (run it now) when never, or when
        the stored time lies past ``now`` by more than two clocks may differ: only a writer of
        the database puts it there, and it would hold discovery off until then."""
        last = self._last_discovery(automation)
        if last is not None and last > now + FUTURE_SKEW:
            log.warning(
                "the last discovery of %s is recorded at %s, after now (%s): run it now",
                automation.name,
                last.isoformat(),
                now.isoformat(),
            )
            return None
        return last

    def due(self, automation: Automation, now: datetime) -> bool:
        last = self._last_run(automation, now)
        return last is None or now >= last + timedelta(seconds=automation.every)

    def tick(self, *, force: bool = False) -> list[Fired]:
        now = self.clock()
        return [self.fire(a) for a in self.app.automations if force or self.due(a, now)]

    def next_fire(self) -> datetime | None:
        times = []
        for automation in self.app.automations:
            now = self.clock()
            last = self._last_run(automation, now)
            times.append(now if last is None else last + timedelta(seconds=automation.every))
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
        limit = automation.hook_timeout
        try:
            found, error = list_discovered(
                self.hooks, automation.discover, ctx, limit, each=accepted, most=MAX_DISCOVERED
            )
        except HookTimeout:
            fired.failure = HOOK_TIMEOUT
            line = f"discovery of {automation.name} ran past its hook_timeout of {limit:g} s"
            log.error("%s and was abandoned; nothing was written", line)
            if self.failures is not None:
                self.failures.add(line)
            return fired
        if error is not None:  # any exception, SystemExit included, is the hook's failure
            told = error if isinstance(error, DiscoveryFailed) else DiscoveryFailed(error)
            fired.failure = told.failure_class
            line = f"discovery of {automation.name} failed ({told.failure_class}: {told.message})"
            log.error("%s; nothing was written\n%s", line, told.trace)
            if told.too_many and self.failures is not None:  # what the hook raised is counted
                self.failures.add(line)  # by its wrapper (watch.py); this it did not raise
            return fired
        keys = []
        for d in found or ():
            if d is None:
                fired.rejected += 1
            else:
                keys.append((d, new_item_id()))
        had_turn = self.creation.create(automation, keys, now, fired)
        if fired.held_back and had_turn:  # the room was full (without the turn: logged there)
            log.warning(
                "discovery of %s created no item for %d new keys: %d of its items are open, "
                "its max_open_items; they are created once items end",
                automation.name,
                fired.held_back,
                automation.max_open_items,
            )
        self.reconnect.call(
            f"recording the discovery of {automation.name}",
            self.store.set_last_discovery,
            automation.name,
            now,
        )
        return fired

    def _insert(
        self,
        automation: Automation,
        d: Discovered,
        item_id: str,
        now: datetime,
        room: int | None = None,
    ) -> Committed | None:
        """Insert the key as item ``item_id`` unless the key exists: ``applied`` when this call
        (or an earlier run of it whose reply was lost: the item found has ``item_id``) wrote it,
        ``lost`` when the key was there, ``refused`` (audited) when the core refused it, and
        ``None`` (nothing written) for a new key when ``room`` is 0."""
        existing = self.store.find(automation.name, d.key)
        if existing is not None:
            return Committed.APPLIED if existing.id == item_id else Committed.LOST
        if room is not None and room <= 0:
            return None
        command = Discover(
            item_id=item_id, automation=automation.name, key=d.key, input=dict(d.input)
        )
        decision = decide(None, command, Context(now, automation.policy))
        return commit(self.store, decision, command=command.name, actor=SCHEDULER, now=now).status


def accepted(entry: Any) -> Discovered | None:
    """An entry discovery listed, as a key and input of exact built-in values; ``None`` when
    it is rejected. Runs within the discovery's time (``discovering.list_discovered``): the
    entry's own ``__str__`` or mapping methods are the hook's code. The key is taken as the
    text it is (a ``str`` subclass's own methods are never asked), and the input is checked,
    copied, and the copy checked again: what is written is the copy, and an input that reads
    differently the second time is rejected."""
    d = discovered(entry)
    if d is None or not isinstance(d.input, Mapping):
        return None
    key = str.__str__(d.key)
    if item_key_problem(key) is not None or outside_limits(key, d.input):
        return None
    try:
        copied = plain_value(d.input)
    except Exception:  # a mapping that changed under the check, or lied to it
        return None
    return None if outside_limits(key, copied) else Discovered(key, copied)


def discovered(entry: Any) -> Discovered | None:
    """What discovery listed as a :class:`Discovered`, or ``None`` when it has no key as text
    (a key that is not a string, an object whose ``str()`` raises, an integer of thousands of
    digits): such an entry is rejected like a key beyond the limits, never a crash of ``run``."""
    try:
        found = entry if isinstance(entry, Discovered) else Discovered(str(entry))
    except Exception:
        return None
    return found if isinstance(found.key, str) else None


def outside_limits(key: str, input: Any) -> bool:
    """A discovered key or input the input boundary refuses (nothing of it is written)."""
    if not isinstance(input, Mapping):
        return True
    return bool(limit_violations({"key": key, "input": input}, "$.discover"))
