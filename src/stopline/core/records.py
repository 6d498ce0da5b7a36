"""Immutable records the core reasons about.

An :class:`Item` is the whole durable state of one automation item. Hot fields (state, version,
retry budget, lease) are typed attributes; the documents an operator reads (evidence, proposal,
artifacts, review packet, revision, account) live in ``data``, a deeply frozen mapping whose
shapes are documented in ``docs/records.md``. Change a record with :func:`dataclasses.replace`,
or on the hot path with :func:`evolve` (the same record, made without the frozen ``__init__``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from .canonical import format_time
from .fast_digest import fast_digest
from .frozen import FrozenDict, deeply_frozen, freeze, private_copy
from .legacy_form import legacy_fast_digest
from .states import State

EMPTY: Mapping[str, Any] = FrozenDict()

# What reading an item's documents can raise when a row was edited by SQL into a shape no
# write makes: a reader that shows such a record catches these, never a rule that acts on it.
SHAPE_ERRORS = (AttributeError, IndexError, KeyError, TypeError, ValueError)


@dataclass(frozen=True)
class Item:
    id: str
    automation: str
    key: str
    state: State
    version: int  # bumped by every write, claims included: the compare-and-set guard
    seq: int  # number of applied events so far (history_length)
    head: str  # hash of the last event, "" before the first
    created_at: datetime
    updated_at: datetime
    attempts: int  # attempts of the current step, counted when a worker claims it
    max_attempts: int
    next_eligible_at: datetime
    lease_owner: str | None = None
    lease_token: int = 0  # fencing token: grows with every claim of this item
    lease_expires_at: datetime | None = None
    claimed_at: datetime | None = None
    attempt_log: tuple[Mapping[str, Any], ...] = ()
    data: Mapping[str, Any] = field(default_factory=lambda: EMPTY)

    def doc(self, name: str) -> Any:
        return self.data.get(name)

    def with_data(self, **changes: Any) -> Mapping[str, Any]:
        """``data`` with ``changes`` applied (a value of ``None`` removes the key)."""
        merged = dict(self.data)
        for key, value in changes.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = freeze(value)
        return FrozenDict(merged)

    def lease_live(self, now: datetime) -> bool:
        return (
            self.lease_owner is not None
            and self.lease_expires_at is not None
            and self.lease_expires_at > now
        )

    def to_plain(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "automation": self.automation,
            "key": self.key,
            "state": self.state.value,
            "version": self.version,
            "history_length": self.seq,
            "head": self.head,
            "created_at": format_time(self.created_at),
            "updated_at": format_time(self.updated_at),
            "attempts": self.attempts,
            "max_attempts": self.max_attempts,
            "next_eligible_at": format_time(self.next_eligible_at),
            "lease": None
            if self.lease_owner is None
            else {
                "owner": self.lease_owner,
                "token": self.lease_token,
                "expires_at": None
                if self.lease_expires_at is None
                else format_time(self.lease_expires_at),
                "claimed_at": None if self.claimed_at is None else format_time(self.claimed_at),
            },
            "lease_token": self.lease_token,
            "attempt_log": [dict(a) for a in self.attempt_log],
            "data": self.data,
        }


def evolve(item: Item, **changes: Any) -> Item:
    """``dataclasses.replace(item, **changes)``, six times cheaper: an :class:`Item` is its
    fields in its ``__dict__`` and nothing else (no ``__post_init__``, no slots, nothing kept
    beside them), so the new record is that dictionary with the changes. A name that is not a
    field is refused, as ``replace`` refuses it."""
    unknown = changes.keys() - _ITEM_FIELDS
    if unknown:
        raise TypeError(f"Item has no field {sorted(unknown)[0]!r}")
    new = object.__new__(Item)
    state = new.__dict__
    state.update(item.__dict__)
    state.update(changes)
    return new


def private_item(item: Item) -> Item:
    """``item`` with its documents and attempt log copied (:func:`frozen.private_copy`): the
    record a hook is handed, so that nothing a hook does to what it was given reaches the
    worker's own record, nor the store's."""
    return evolve(item, data=private_copy(item.data), attempt_log=private_copy(item.attempt_log))


_ITEM_FIELDS = frozenset(f.name for f in fields(Item))
if hasattr(Item, "__post_init__") or hasattr(Item, "__slots__"):  # evolve would skip them
    raise TypeError("evolve() needs an Item that is its fields and nothing more")


@dataclass(frozen=True)
class Actor:
    name: str
    roles: frozenset[str]
    active: bool = True

    def has_any(self, roles: tuple[str, ...] | frozenset[str]) -> str | None:
        """The first of ``roles`` this actor holds (the authority basis), or ``None``."""
        if not self.active:
            return None
        for role in sorted(roles):
            if role in self.roles:
                return role
        return None


@dataclass(frozen=True)
class Event:
    item_id: str
    seq: int
    at: datetime
    command: str
    actor: str
    from_state: State | None
    to_state: State
    reasons: tuple[str, ...]
    digests: Mapping[str, Any]
    detail: Mapping[str, Any]
    prev_hash: str
    hash: str = ""

    def body(self) -> dict[str, Any]:
        """What the event hash covers: everything but the hash itself."""
        return {
            "item_id": self.item_id,
            "seq": self.seq,
            "at": self.at,
            "command": self.command,
            "actor": self.actor,
            "from_state": None if self.from_state is None else self.from_state.value,
            "to_state": self.to_state.value,
            "reasons": list(self.reasons),
            "digests": self.digests,
            "detail": self.detail,
            "prev_hash": self.prev_hash,
        }

    @classmethod
    def sealed(cls, **fields: Any) -> Event:
        """The event with its hash computed over everything else."""
        unsealed = cls(**fields)
        object.__setattr__(unsealed, "hash", unsealed.computed_hash())
        if unsealed.stored_form() or (
            deeply_frozen(unsealed.digests) and deeply_frozen(unsealed.detail)
        ):
            unsealed.__dict__["_hash_ok"] = True  # its hash was made over it just now
        return unsealed

    def stored_form(self) -> bool:
        """Its documents are frozen to the bottom and exactly what their stored JSON reads
        back as (``deeply_frozen(..., as_stored=True)``); a yes is kept, as nothing in such
        an event can change."""
        if self.__dict__.get("_stored_form"):
            return True
        stored = deeply_frozen(self.digests, as_stored=True) and deeply_frozen(
            self.detail, as_stored=True
        )
        if stored:
            self.__dict__["_stored_form"] = True  # beside the fields: not compared, not hashed
        return stored

    def computed_hash(self) -> str:
        return fast_digest(self.body())

    def hash_ok(self) -> bool:
        """The event is exactly the one its hash was computed over (in the canonical form, or
        the form before RFC 8785 that events written by earlier releases carry).

        Worked out once per record whose documents are frozen to the bottom (as the store
        reads them): nothing in such a record can change, so neither can the answer."""
        known = self.__dict__.get("_hash_ok")
        if known is not None:
            return bool(known)
        try:
            body = self.body()
            ok = self.hash == fast_digest(body) or self.hash == legacy_fast_digest(body)
        except (TypeError, ValueError):
            ok = False
        if deeply_frozen(self.digests) and deeply_frozen(self.detail):
            self.__dict__["_hash_ok"] = ok  # beside the fields: not compared, not hashed
        return ok

    def to_plain(self) -> dict[str, Any]:
        return {**self.body(), "hash": self.hash}
