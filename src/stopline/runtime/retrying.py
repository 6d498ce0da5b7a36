"""Riding out a database that went away: one retry loop with capped exponential backoff.

Every store call of ``stopline run`` (opening and migrating the store, registering the
automations, discovery, the work loop of every worker process) goes through
:meth:`Reconnect.call`; a shell that talks to the store on its own (a server, a notifier) can
use it the same way.

Which errors are retried (:func:`is_transient`): the driver errors of
:func:`stopline.store.errors.connection_errors` that mean "unreachable or busy right now" -- a
PostgreSQL connection refused, ended (``AdminShutdown`` on a restart or a terminated backend),
a pool that found no live connection in time, a lock or resource that was not available; a
SQLite file that stayed locked past its busy timeout. An error that would come back the same
on every try (a PostgreSQL program limit, any other SQLite error, every non-driver error)
reaches the caller at once.

What may be retried: only a call that is safe to run again after a failure whose commit outcome
is unknown, because the connection may have died after the server committed and before the
reply came back. That is a read, an idempotent write (an upsert to the same value, an insert
that does nothing when the row exists, a migration that checks its version), or a
check-then-write whose check reads back what an earlier run committed. A bare write that
would apply twice is never passed here: its caller reads the record back before deciding
again (the worker does this for every commit of a decision).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ParamSpec, TypeVar

from ..store.errors import is_transient

__all__ = ["FIRST_DELAY", "MAX_DELAY", "Reconnect", "Stopped", "is_transient"]

T = TypeVar("T")
P = ParamSpec("P")
log = logging.getLogger("stopline.reconnect")

FIRST_DELAY = 0.1  # seconds before the first retry
MAX_DELAY = 5.0  # the cap of the doubling delay


class Stopped(Exception):
    """A stop was asked for while waiting for the database to come back."""


def _never() -> bool:
    return False


@dataclass
class Reconnect:
    """Runs a store call until it gets through, waiting ``first``, then twice as long each
    time up to ``cap`` seconds, between tries; one warning is logged per retry.

    ``patience``: seconds of failures after which the last error is raised (``None``: retry as
    long as it takes). ``stopping``: checked after each failure; when it returns ``True`` the
    wait ends with :class:`Stopped` instead (a signal handler sets it, so a stopped process
    waits out at most the sleep in progress).
    """

    first: float = FIRST_DELAY
    cap: float = MAX_DELAY
    patience: float | None = None
    stopping: Callable[[], bool] = _never
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    logger: logging.Logger = field(default=log, repr=False)

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1, 2, ...): for a caller that waits
        its own way (an asyncio task sleeps with ``await asyncio.sleep(delay)``)."""
        doublings = min(max(retry - 1, 0), 64)  # an outage of days must not overflow a float
        return min(self.first * 2.0**doublings, self.cap)

    def call(self, what: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)``, retried while it fails with a transient error. ``what``
        names the call in the log (``"registering automation triage"``)."""
        started: float | None = None
        retries = 0
        while True:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                now = self.monotonic()
                started = now if started is None else started
                delay = self.delay(retries + 1)
                if self.patience is not None and now + delay - started > self.patience:
                    raise
                if self.stopping():
                    raise Stopped(what) from exc
                retries += 1
                self.logger.warning(
                    "database unavailable while %s (%s: %s); retry %d in %.1f s",
                    what,
                    type(exc).__name__,
                    " ".join(str(exc).split())[:300],
                    retries,
                    delay,
                )
            self.sleep(delay)
