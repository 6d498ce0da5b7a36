"""What a SQL dialect provides (connections, migrations, value codecs) and the conversions
between rows and the core's records, shared by every part of the SQL store."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

from ..core import severity
from ..core.canonical import format_time, parse_time
from ..core.data_digest import stored_form
from ..core.frozen import freeze, load_frozen, load_frozen_deep, storage_json
from ..core.ledger import LedgerEntry
from ..core.records import Actor, Event, Item
from ..core.search import search_text
from ..core.states import State

Row = Mapping[str, Any]

EVENT_COLUMNS = (  # the columns of an event row (current_item prefixes them with e_)
    "item_id",
    "seq",
    "at",
    "command",
    "actor",
    "from_state",
    "to_state",
    "reasons",
    "digests",
    "detail",
    "prev_hash",
    "hash",
)

_AT = EVENT_COLUMNS.index("at")


def event_key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """An event row's values as the key of what it decoded to: its time as the UTC instant.
    A driver may read a time in its session's zone, and two times of one zone that fall in the
    hour repeated when the clocks go back compare (and hash) equal though an hour apart: keyed
    as they are read, a time moved by that hour would find the record decoded before."""
    at = values[_AT]
    if type(at) is datetime and at.tzinfo is not UTC:
        return (*values[:_AT], at.astimezone(UTC), *values[_AT + 1 :])
    return values


MEMO_EVENTS = 4096  # event rows a store keeps decoded (the whole memo is dropped when full)
MEMO_DATA, MEMO_DATA_CHARS = 1024, 8_000_000  # item data kept whole by stored text; their size


class SQLRows(ABC):
    """The driver contract and the row codecs; :class:`stopline.store.base.SQLStore` builds
    on it."""

    url: str
    q: dict[str, str]  # the named queries of the dialect
    _migrations: list[tuple[int, str, str]]

    dialect: str = ""

    pyformat: bool = False

    integrity_errors: tuple[type[BaseException], ...] = ()

    _event_memo: dict[tuple[Any, ...], Event]  # event rows decoded, by every column's value
    _data_memo: dict[str, Any]  # item data decoded and its documents put back, by its text
    _data_chars = 0

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def _write(self) -> AbstractContextManager[Any]:
        """A cursor inside one write transaction (committed on exit, rolled back on error)."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Any]:
        """A cursor for reads."""

    def _read_all(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[Any]]:
        """Every row of each statement, in order (PostgreSQL sends them in one round trip)."""
        with self._read() as cur:
            out = []
            for sql, params in statements:
                cur.execute(sql, params)
                out.append(cur.fetchall())
            return out

    @abstractmethod
    def _apply_migration(self, version: int, name: str, sql: str) -> bool:
        """Apply one migration unless already applied (under the dialect's lock)."""

    @abstractmethod
    def schema_version(self) -> int: ...

    def _time(self, value: datetime | None) -> Any:
        return None if value is None else format_time(value)

    def _json(self, value: Any) -> Any:
        return storage_json(value)

    @staticmethod
    def _from_time(value: Any) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, datetime):
            return value
        return parse_time(str(value))

    @staticmethod
    def _from_json(value: Any) -> Any:
        return json.loads(value) if isinstance(value, str | bytes) else value

    @staticmethod
    def _from_json_frozen(value: Any) -> Any:
        return load_frozen(value) if isinstance(value, str | bytes) else freeze(value)

    def _data_value(self, value: Any) -> Any:
        """An item row's ``data`` as stored (its documents still apart), read-only to the
        bottom."""
        return load_frozen_deep(value) if isinstance(value, str | bytes) else freeze(value)

    def _remember_data(self, text: str, value: Any) -> None:
        memo = self._data_memo
        if len(memo) >= MEMO_DATA or self._data_chars > MEMO_DATA_CHARS:
            memo.clear()
            self._data_chars = 0
        memo[text] = value
        self._data_chars += len(text)

    @staticmethod
    def _rowcount(cur: Any) -> int:
        return int(cur.rowcount)

    def _item(self, row: Row, *, data: Any = None) -> Item:
        """The item of ``row``; ``data``: its documents already read (see :mod:`.documents`)."""
        created = self._from_time(row["created_at"])
        updated = self._from_time(row["updated_at"])
        eligible = self._from_time(row["next_eligible_at"])
        assert created and updated and eligible
        return Item(
            id=row["id"],
            automation=row["automation"],
            key=row["key"],
            state=State(row["state"]),
            version=int(row["version"]),
            seq=int(row["seq"]),
            head=row["head"],
            created_at=created,
            updated_at=updated,
            attempts=int(row["attempts"]),
            max_attempts=int(row["max_attempts"]),
            next_eligible_at=eligible,
            lease_owner=row["lease_owner"],
            lease_token=int(row["lease_token"]),
            lease_expires_at=self._from_time(row["lease_expires_at"]),
            claimed_at=self._from_time(row["claimed_at"]),
            attempt_log=tuple(self._from_json_frozen(row["attempt_log"])),
            data=self._from_json_frozen(row["data"]) if data is None else data,
        )

    def _item_params(self, item: Item, *, data: Any = None) -> dict[str, Any]:
        """Every column of ``item``'s row; ``data``: what to store instead of its documents."""
        return {
            "id": item.id,
            "automation": item.automation,
            "key": item.key,
            "state": item.state.value,
            "state_class": item.state.state_class.value,
            "version": item.version,
            "seq": item.seq,
            "head": item.head,
            "created_at": self._time(item.created_at),
            "updated_at": self._time(item.updated_at),
            "attempts": item.attempts,
            "max_attempts": item.max_attempts,
            "next_eligible_at": self._time(item.next_eligible_at),
            "lease_owner": item.lease_owner,
            "lease_token": item.lease_token,
            "lease_expires_at": self._time(item.lease_expires_at),
            "claimed_at": self._time(item.claimed_at),
            "attempt_log": self._json(list(item.attempt_log)),
            "data": self._json(item.data if data is None else data),
            "severity_rank": severity.rank(item.data),
            "search_text": search_text(item),
        }

    def _event(self, row: Row) -> Event:
        """The event of ``row``. A row read before, to the last byte of every column, gives
        the very record decoded then (a history is read again at every authority check): that
        record is read-only to the bottom, so what the core checked on it holds for it still
        (:meth:`Event.hash_ok`), while a row changed in any column decodes, and is checked,
        afresh."""
        key = event_key(tuple(row[name] for name in EVENT_COLUMNS))
        found = self._event_memo.get(key)
        if found is None:
            found = self._decode_event(row)
            self._remember_event(key, found)
        return found

    def _remember_written(
        self, decision_params: Mapping[str, Any], item: Item | None, event: Event | None
    ) -> None:
        """After a commit that wrote ``item`` and ``event`` (with ``decision_params``): the
        rows as they read back map to these very records, when those are exactly what the
        rows decode to, so the next read of them (the guard's) finds what was checked
        already. (An item's stored text names its documents by digest, so the text and the
        documents' sound bodies make one value.)"""
        if item is None or event is None:
            return
        if stored_form(item.data):
            self._remember_data(self._as_read(decision_params["data"]), item.data)
        if (
            event.at.tzinfo is UTC
            and type(event.reasons) is tuple
            and all(type(r) is str for r in event.reasons)
            and event.stored_form()
            and self._from_time(decision_params["at"]) == event.at
        ):
            key = event_key(tuple(self._as_read(decision_params[name]) for name in EVENT_COLUMNS))
            self._remember_event(key, event)

    def _as_read(self, param: Any) -> Any:
        """A value bound for a column as the column reads it back (a JSON parameter as its
        text)."""
        return param

    def _remember_event(self, key: tuple[Any, ...], event: Event) -> None:
        memo = self._event_memo
        if len(memo) >= MEMO_EVENTS:
            memo.clear()
        memo[key] = event

    def _decode_event(self, row: Row) -> Event:
        at = self._from_time(row["at"])
        assert at is not None
        return Event(
            item_id=row["item_id"],
            seq=int(row["seq"]),
            at=at,
            command=row["command"],
            actor=row["actor"],
            from_state=None if row["from_state"] is None else State(row["from_state"]),
            to_state=State(row["to_state"]),
            reasons=tuple(self._from_json(row["reasons"])),
            digests=freeze(self._from_json(row["digests"])),
            detail=freeze(self._from_json(row["detail"])),
            prev_hash=row["prev_hash"],
            hash=row["hash"],
        )

    def _event_params(self, event: Event) -> dict[str, Any]:
        return {
            "item_id": event.item_id,
            "seq": event.seq,
            "at": self._time(event.at),
            "command": event.command,
            "actor": event.actor,
            "from_state": None if event.from_state is None else event.from_state.value,
            "to_state": event.to_state.value,
            "reasons": self._json(list(event.reasons)),
            "digests": self._json(event.digests),
            "detail": self._json(event.detail),
            "prev_hash": event.prev_hash,
            "hash": event.hash,
        }

    def _automations_param(self, automations: Sequence[str] | None) -> Any:
        return None if automations is None else json.dumps(list(automations))

    def _actor(self, row: Row) -> Actor:
        return Actor(row["name"], frozenset(self._from_json(row["roles"])), bool(row["active"]))

    def _ledger_entry(self, row: Row) -> LedgerEntry:
        return LedgerEntry(
            int(row["shard"]),
            int(row["n"]),
            self._from_time(row["at"]) or datetime.min,
            row["kind"],
            row["item_id"],
            int(row["seq"]),
            row["event_hash"],
            row["prev_hash"],
            row["hash"],
        )
