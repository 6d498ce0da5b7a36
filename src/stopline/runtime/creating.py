"""Creating the items a discovery found, within its automation's ``max_open_items``.

The room is counted and filled in the automation's discovery turn (``store/discovery_turns.py``),
so schedulers on several hosts fill it one after the other. Within the turn no store call waits
out a database that went away: a connection lost may have taken the turn with it (the server
lets go of a session's lock when the session ends), and another scheduler may have filled the
room meanwhile. So a transient failure ends the turn; once the database answers again, the turn
is taken anew and the room counted anew before the next key. A key whose insert failed keeps
its item id, so an insert that committed before its reply was lost is found, not made twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..store import Store
from ..store.errors import is_transient
from .automation import Automation, Discovered
from .commit import Committed
from .retrying import Reconnect, Stopped

if TYPE_CHECKING:
    from .scheduler import Fired

log = logging.getLogger("stopline.scheduler")

TURN_WAIT = 60.0  # seconds a discovery waits for its turn before it creates nothing new

Insert = Callable[[Automation, Discovered, str, datetime, "int | None"], "Committed | None"]


@dataclass
class Creation:
    store: Store
    reconnect: Reconnect
    insert: Insert

    def create(
        self,
        automation: Automation,
        keys: Sequence[tuple[Discovered, str]],
        now: datetime,
        fired: Fired,
    ) -> bool:
        """Create the items of ``keys`` (each with its new item id) as the room allows,
        counting each outcome in ``fired``. ``False``: the turn was not had within
        ``TURN_WAIT``, and every new key left was held back."""
        if automation.max_open_items is None:  # no room to count: no turn
            self._each(automation, keys, now, fired, None)
            return True
        pending, failures = list(keys), 0
        while pending:
            turn = self.reconnect.call(
                f"waiting for the discovery turn of {automation.name}",
                self.store.discovery_turn,
                automation.name,
                TURN_WAIT,
            )
            if turn is None:  # keys that exist are found; new ones held back, nothing written
                held = fired.held_back
                self._each(automation, pending, now, fired, 0)
                log.warning(
                    "discovery of %s created no item for %d new keys: another scheduler's "
                    "discovery of it held its turn for %g s; they are created by a later pass",
                    automation.name,
                    fired.held_back - held,
                    TURN_WAIT,
                )
                return False
            try:
                left = self._in_turn(automation, pending, now, fired)
            finally:
                turn.end()
            failures = failures + 1 if len(left) == len(pending) else 1  # 1: it got further
            pending = left
            if pending:
                if self.reconnect.stopping():
                    raise Stopped()
                self.reconnect.sleep(self.reconnect.delay(failures))
        return True

    def _each(
        self,
        automation: Automation,
        keys: Sequence[tuple[Discovered, str]],
        now: datetime,
        fired: Fired,
        room: int | None,
    ) -> None:
        """Each key, its store calls riding out a database that went away (no turn to lose:
        without a limit, or with no room, which writes nothing)."""
        for d, item_id in keys:
            what = f"discovering {automation.name}/{d.key}"
            tally(fired, self.reconnect.call(what, self.insert, automation, d, item_id, now, room))

    def _in_turn(
        self,
        automation: Automation,
        pending: Sequence[tuple[Discovered, str]],
        now: datetime,
        fired: Fired,
    ) -> list[tuple[Discovered, str]]:
        """Count the room and fill it; the keys left when the database went away (to be
        created in a new turn, the room counted again), else none."""
        most = automation.max_open_items
        assert most is not None
        done = 0
        try:
            room: int | None = max(most - self.store.open_items(automation.name, most), 0)
            for d, item_id in pending:
                room = tally(fired, self.insert(automation, d, item_id, now, room), room)
                done += 1
        except Exception as exc:
            if not is_transient(exc):
                raise
            log.warning(
                "discovery of %s lost the database (%s): it takes its turn again and counts "
                "the room anew before the next of %d keys",
                automation.name,
                type(exc).__name__,
                len(pending) - done,
            )
            return list(pending[done:])
        return []


def tally(fired: Fired, status: Committed | None, room: int | None = None) -> int | None:
    """Count one key's outcome in ``fired``; the room left after it."""
    if status is None:
        fired.held_back += 1
    elif status is Committed.APPLIED:
        fired.new += 1
        room = None if room is None else room - 1
    elif status is Committed.REFUSED:  # audited, like every refusal
        fired.rejected += 1
    else:
        fired.existing += 1
    return room
