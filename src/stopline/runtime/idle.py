"""How long a background thread (a worker's lease renewer, its hook watchdog) has had nothing
to do, so that it can end rather than stay idle in a process that makes many workers."""

from __future__ import annotations


class Idleness:
    """Fed at each wake of its thread: is there work, and what time it is (monotonic)."""

    def __init__(self) -> None:
        self.since: float | None = None

    def long_enough(self, busy: bool, now: float, after: float) -> bool:
        """``True`` once the thread has had nothing to do for ``after`` seconds."""
        if busy:
            self.since = None
            return False
        if self.since is None:
            self.since = now
        return now - self.since >= after
