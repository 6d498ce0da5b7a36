"""Read-only values and the JSON they are stored as.

Records hold their documents frozen (:func:`freeze`: mappings become :class:`FrozenDict`,
lists tuples), so no caller changes what another holds; :func:`thaw` is the JSON-ready twin.
The store writes them as compact JSON (:func:`storage_json`: not a digest's form, see
:mod:`.canonical`) and reads them back frozen (:func:`load_frozen`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .canonical import CanonicalError, bytes_object, format_time, to_plain


class FrozenDict(dict[str, Any]):
    """A read-only ``dict``: every mutating method raises. Being a ``dict``, it goes through
    the C JSON encoder as fast as any other (a mapping proxy would not)."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("records are immutable: build a new one with dataclasses.replace")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=lambda kv: kv[0])))

    def __reduce__(self) -> Any:
        return (FrozenDict, (dict(self),))


EMPTY_MAP: Mapping[str, Any] = FrozenDict()


def freeze(value: Any) -> Any:
    """A deeply read-only copy: mappings become :class:`FrozenDict`, lists become tuples. A
    :class:`FrozenDict` is taken as it is: every one stopline makes holds frozen values."""
    kind = type(value)
    if kind in _SCALARS or value is None:  # the common leaves, without an ABC check
        return value
    if kind is dict:
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, Mapping):
        if type(value) is FrozenDict:
            return value
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def private_copy(value: Any) -> Any:
    """A deep copy that no other code holds: new read-only mappings and tuples to the bottom,
    the immutable leaves shared. A :class:`FrozenDict` refuses its own mutating methods, but
    ``dict``'s, called on it directly, still change it; so what stopline hands to code it does
    not own (a hook's context, an artifact a target writes) is such a copy, never a record the
    worker or its store keeps and has checked (``store/rows.py`` keeps records by the rows
    they came from, and the digests of read-only values by the values)."""
    kind = type(value)
    if kind is FrozenDict or kind is dict:
        return FrozenDict({k: private_copy(v) for k, v in value.items()})
    if kind is tuple or kind is list:
        return tuple(private_copy(v) for v in value)
    return value


def deeply_frozen(value: Any, *, as_stored: bool = False) -> bool:
    """Whether nothing in ``value`` can change: read-only mappings and tuples to the bottom,
    holding only strings, numbers, booleans, ``None`` and times. ``as_stored``: and it is
    what its stored JSON reads back as (:func:`load_frozen_deep`) to the type and the order:
    string keys, no times."""
    scalars = _JSON_SCALARS if as_stored else _SCALARS
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is FrozenDict:
            if as_stored and not all(type(key) is str for key in item):
                return False
            stack.extend(item.values())
        elif kind is tuple:
            stack.extend(item)
        elif kind not in scalars and item is not None:
            return False
    return True


_JSON_SCALARS = frozenset({str, int, float, bool})
_SCALARS = _JSON_SCALARS | {datetime}


def load_frozen_deep(text: str | bytes) -> Any:
    """Parse stored JSON into a value read-only to the bottom (arrays become tuples)."""
    return freeze(json.loads(text))


def thaw(value: Any) -> Any:
    """The mutable JSON-ready twin of :func:`freeze` (times and bytes converted)."""
    return to_plain(value)


def storage_default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes_object(value)
    plain = getattr(value, "to_plain", None)
    if callable(plain):
        return plain()
    raise CanonicalError(f"{type(value).__name__} has no JSON form")


_STORAGE = json.JSONEncoder(
    default=storage_default, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def storage_json(value: Any) -> str:
    """Compact JSON for storage (not for digests): the C encoder, keys in insertion order."""
    return _STORAGE.encode(value)


def load_frozen(text: str | bytes) -> Any:
    """Parse stored JSON into read-only mappings (arrays stay lists: they are never shared)."""
    if isinstance(text, str):
        return _FROZEN_JSON.decode(text)
    return json.loads(text, object_hook=FrozenDict)  # bytes: json finds their encoding


# one decoder for every load (json.loads with an object_hook builds a new one per call)
_FROZEN_JSON = json.JSONDecoder(object_hook=FrozenDict)


class KeptByValue:
    """What was worked out for values nothing can change, each held with the value itself
    (so its ``id`` is never another value's while the entry lives); dropped whole when it
    holds ``entries`` values or ``chars`` characters. The caller keeps only what
    :func:`deeply_frozen` says cannot change."""

    def __init__(self, entries: int, chars: int) -> None:
        self.entries, self.chars = entries, chars
        self._kept: dict[int, tuple[Any, Any]] = {}
        self._chars = 0

    def get(self, value: Any) -> tuple[bool, Any]:
        """``(True, what was kept)`` for this very value, else ``(False, None)``."""
        known = self._kept.get(id(value))
        if known is not None and known[0] is value:
            return True, known[1]
        return False, None

    def keep(self, value: Any, result: Any, size: int) -> None:
        """Keep ``result`` for ``value`` (``size`` characters of it); an entry larger than a
        sixteenth of the bound is not kept."""
        if size > self.chars // 16:
            return
        if len(self._kept) >= self.entries or self._chars + size > self.chars:
            self._kept.clear()
            self._chars = 0
        self._kept[id(value)] = (value, result)
        self._chars += size
