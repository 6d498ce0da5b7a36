"""The sign-outs port: web inbox sessions that were signed out, for every server process.

A session of the web inbox is a signed cookie (``web/session.py``); signing out records it
here (:meth:`SignOuts.end`), keyed by a hash of its id, never the id, until the latest time its
cookie could still be valid. Every request of a signed-in session asks
(:meth:`SignOuts.ended`), so a copy of the cookie is signed out in every process on the
database, before and after a restart. A sign-out drops the rows past their time.
The SQL is in ``sql/common/signouts.sql``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from ..core.canonical import format_time
from .queries import load

if TYPE_CHECKING:
    from .base import SQLStore


class SignOuts(Protocol):
    def end(self, session_hash: str, valid_until: datetime, now: datetime) -> None:
        """Record the session (the hash of its id) as signed out until ``valid_until``, and
        drop the rows whose time is past at ``now``: one transaction."""
        ...

    def ended(self, session_hash: str) -> bool:
        """Whether the session (the hash of its id) was signed out."""
        ...


class SQLSignOuts:
    """:class:`SignOuts` on a SQL store's connections."""

    def __init__(self, store: SQLStore) -> None:
        self._store = store
        self._q = load(store.dialect, store.pyformat, "signouts")

    def end(self, session_hash: str, valid_until: datetime, now: datetime) -> None:
        with self._store._write() as cur:
            cur.execute(self._q["forget_ended_sessions"], {"before": format_time(now)})
            params = {"session_hash": session_hash, "valid_until": format_time(valid_until)}
            cur.execute(self._q["end_session"], params)

    def ended(self, session_hash: str) -> bool:
        with self._store._read() as cur:
            cur.execute(self._q["session_ended"], {"session_hash": session_hash})
            return cur.fetchone() is not None
