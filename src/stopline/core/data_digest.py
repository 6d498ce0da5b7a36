"""The digest of an item's data, which every seal made or checked takes: put together from
the canonical text of each value, the text of a value frozen to the bottom kept, so a step
writes again only the values it changed."""

from __future__ import annotations

from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any

from .canonical import MAX_SAFE_INTEGER
from .fast_digest import fast_canonical, fast_digest, members_text, text_digest
from .frozen import FrozenDict, KeptByValue, deeply_frozen


def data_digest(data: Mapping[str, Any]) -> str:
    """The digest of an item's data. Every seal made or checked takes it, so it is kept for
    data frozen to the bottom (the record a step hands to the next, the data a store decoded):
    such a value cannot change, so neither can its digest. The memo holds the value itself,
    so its ``id`` is never another value's while the entry lives."""
    known = _DATA_DIGESTS.get(id(data))
    if known is not None and known[0] is data:
        return known[1]
    made, stored = _digest_by_values(data)
    if stored:
        if len(_DATA_DIGESTS) >= MEMO_DATA:
            _DATA_DIGESTS.clear()
        _DATA_DIGESTS[id(data)] = (data, made)
    return made


def stored_form(data: Mapping[str, Any]) -> bool:
    """Whether ``data`` is frozen to the bottom and exactly what its stored JSON reads back
    as (``frozen.deeply_frozen(data, as_stored=True)``; known at once for data whose digest
    was kept)."""
    known = _DATA_DIGESTS.get(id(data))
    return (known is not None and known[0] is data) or deeply_frozen(data, as_stored=True)


MEMO_DATA = 1024  # data digests kept (the whole memo is dropped when full)
_DATA_DIGESTS: dict[int, tuple[Mapping[str, Any], str]] = {}


def _digest_by_values(data: Mapping[str, Any]) -> tuple[str, bool]:
    """``fast_digest(data)``, put together from the canonical text of each value, and whether
    ``data`` is frozen as stored (``deeply_frozen(data, as_stored=True)``). A step changes one
    or two values of an item's data and keeps the others, the very objects: the text of a
    value frozen to the bottom is kept, so only what changed is written, or walked, again.
    Data of another kind (not read-only, a key that is not ASCII) goes the general way."""
    if type(data) is not FrozenDict or not all(type(k) is str and k.isascii() for k in data):
        return fast_digest(data), deeply_frozen(data, as_stored=True)
    members = []
    stored = True
    for key in sorted(data):
        text, frozen = _value_text(data[key])
        members.append(f"{encode_basestring(key)}:{text}")
        stored = stored and frozen
    return text_digest("{" + ",".join(members) + "}"), stored


_STORED_SCALARS = frozenset({str, int, float, bool, type(None)})


def _value_text(value: Any) -> tuple[str, bool]:
    """The canonical text of ``value``, and whether it is frozen as stored."""
    kind = type(value)
    if kind is str:  # a lone surrogate is refused by the digest's UTF-8 encoding
        return encode_basestring(value), True
    if kind is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return int.__repr__(value), True
    if kind is not FrozenDict and kind is not tuple:
        return fast_canonical(value), kind in _STORED_SCALARS
    kept, text = _VALUE_TEXTS.get(value)
    if kept:
        return text, True
    if kind is FrozenDict and len(value) <= _FLAT_MEMBERS:
        flat = _flat_text(value)
        if flat is not None:
            return flat, True
    text = fast_canonical(value)
    frozen = deeply_frozen(value, as_stored=True)
    if frozen:
        _VALUE_TEXTS.keep(value, text, len(text))
    return text, frozen


_FLAT_MEMBERS = 8


def _flat_text(value: Mapping[str, Any]) -> str | None:
    """The canonical text of a small read-only mapping of ASCII keys to strings and safe
    integers (the ``step`` a transition writes, say) without the encoder's walk; ``None`` for
    any other (the general way)."""
    if not all(type(key) is str and key.isascii() for key in value):
        return None
    # ASCII keys: code point order is RFC 8785's
    return members_text(value, [(key, encode_basestring(key)) for key in sorted(value)])


# the canonical text of data values frozen as stored
_VALUE_TEXTS = KeptByValue(MEMO_DATA, 8 * 2**20)
