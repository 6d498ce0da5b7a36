"""Waking PostgreSQL workers: ``LISTEN stopline_work`` on a connection of its own.

A trigger (``items_notify_work``) sends ``NOTIFY stopline_work`` inside the writing
transaction whenever an item enters a work state or gets a new due time, so the notification
is delivered exactly when the write commits. :meth:`PgWakeups.wait_for_work` listens on a
dedicated connection, kept open between calls so that nothing sent between two waits is lost.
"""

from __future__ import annotations

import threading
import time
from contextlib import suppress
from typing import Any

import psycopg

from .pg_connect import tcp_settings

CHANNEL = "stopline_work"


class PgWakeups:
    """The listening side of a PostgreSQL store (``url`` and ``timeout`` are the store's)."""

    url: str
    timeout: float
    _listen_lock: threading.Lock
    _listen_conn: psycopg.Connection[Any] | None

    def wait_for_work(self, timeout: float) -> None:
        """Block until a ``stopline_work`` notification or ``timeout`` seconds.

        Notifications queued since the last call return at once (and are drained together).
        Returning early is always safe: the caller then simply tries to claim. If the listening
        connection broke, it is reopened and the call returns at once (a notification may have
        been missed); if it cannot be reopened, the call sleeps out its timeout.
        """
        deadline = time.monotonic() + max(0.0, timeout)
        if not self._listen_lock.acquire(timeout=max(0.0, timeout)):
            return  # the time ran out while another thread of this store was waiting
        try:
            try:
                conn = self._listener()
                remaining = max(0.0, deadline - time.monotonic())
                for _ in conn.notifies(timeout=remaining, stop_after=1):
                    pass
                for _ in conn.notifies(timeout=0):
                    pass
                return
            except psycopg.OperationalError:
                self._drop_listener()
            try:
                self._listener()
                return
            except psycopg.OperationalError:
                self._drop_listener()
        finally:
            self._listen_lock.release()
        time.sleep(max(0.0, deadline - time.monotonic()))

    @property
    def listening(self) -> psycopg.Connection[Any] | None:
        """The session that listens for new work (None before the first wait): read only, for
        the tests that read its notifications or kill it."""
        return self._listen_conn

    def _listener(self) -> psycopg.Connection[Any]:
        """The listening connection (opened on first use; the caller holds the lock)."""
        if self._listen_conn is None or self._listen_conn.closed:
            conn = psycopg.connect(
                self.url,
                autocommit=True,
                connect_timeout=max(2, int(self.timeout)),
                **tcp_settings(self.url),
            )
            conn.execute("LISTEN " + CHANNEL)
            self._listen_conn = conn
        return self._listen_conn

    def _drop_listener(self) -> None:
        if self._listen_conn is not None:
            with suppress(psycopg.Error):
                self._listen_conn.close()
            self._listen_conn = None
