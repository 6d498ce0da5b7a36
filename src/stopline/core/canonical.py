"""Canonical JSON and SHA-256 digests.

Every digest stopline shows (proposal, evidence, artifact content, QA, review packet, revision
request, event hash) is ``sha256(canonical_json(value))`` written as lowercase hex. The canonical
form is what anyone can recompute from ``stopline show --json``:

* objects have string keys, sorted by code point; arrays keep their order;
* UTF-8, no insignificant whitespace (``","`` and ``":"`` separators), non-ASCII kept as is;
* integers as JSON integers; finite floats as Python's ``repr``; NaN and infinities are refused;
* times (``datetime``) must be timezone-aware and become RFC 3339 UTC strings with microseconds,
  ``"2026-11-29T21:39:20.000000Z"``;
* bytes become ``{"$bytes": "<standard base64>"}``;
* tuples are arrays; ``None``, ``True`` and ``False`` are ``null``, ``true`` and ``false``.

Anything else (sets, non-string keys, naive times) raises :class:`CanonicalError`: a digest is
never computed over a value that two readers could serialise differently.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any


class CanonicalError(ValueError):
    """A value has no canonical JSON form."""


def format_time(value: datetime) -> str:
    """RFC 3339 UTC with microseconds, the one time format of stopline."""
    if value.tzinfo is not UTC:
        if value.tzinfo is None or value.utcoffset() is None:
            raise CanonicalError("naive datetime has no canonical form; pass a timezone-aware time")
        value = value.astimezone(UTC)
    return value.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_time(text: str) -> datetime:
    """Inverse of :func:`format_time` (accepts any RFC 3339 time with an offset)."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        raise CanonicalError(f"time without offset: {text!r}")
    return value.astimezone(UTC)


def to_plain(value: Any) -> Any:
    """The JSON-ready form of ``value`` under the rules above."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalError("NaN and infinities have no canonical form")
        return value
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalError(f"object key must be a string, not {type(key).__name__}")
            out[key] = to_plain(item)
        return out
    if isinstance(value, Sequence):
        return [to_plain(item) for item in value]
    plain = getattr(value, "to_plain", None)
    if callable(plain):
        return to_plain(plain())
    raise CanonicalError(f"{type(value).__name__} has no canonical form")


def canonical_json(value: Any) -> str:
    return json.dumps(
        to_plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def digest(value: Any) -> str:
    """``sha256`` of the canonical JSON of ``value``, lowercase hex."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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


def _storage_default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    plain = getattr(value, "to_plain", None)
    if callable(plain):
        return plain()
    raise CanonicalError(f"{type(value).__name__} has no JSON form")


_CANONICAL = json.JSONEncoder(
    default=_storage_default,
    sort_keys=True,
    separators=(",", ":"),
    ensure_ascii=False,
    allow_nan=False,
)
_STORAGE = json.JSONEncoder(
    default=_storage_default, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def fast_digest(value: Any) -> str:
    """:func:`digest` through the C encoder, for values the core builds itself (string keys
    only, times and bytes converted as in the canonical form): the event hash of every
    transition. Equal to ``digest(value)`` for such values (a test holds them together)."""
    return hashlib.sha256(_CANONICAL.encode(value).encode("utf-8")).hexdigest()


def storage_json(value: Any) -> str:
    """Compact JSON for storage (not for digests): the C encoder, keys in insertion order."""
    return _STORAGE.encode(value)


def load_frozen(text: str | bytes) -> Any:
    """Parse stored JSON into read-only mappings (arrays stay lists: they are never shared)."""
    return json.loads(text, object_hook=FrozenDict)


def freeze(value: Any) -> Any:
    """A deeply read-only copy: mappings become :class:`FrozenDict`, lists become tuples."""
    if isinstance(value, Mapping):
        if type(value) is FrozenDict:
            return value
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """The mutable JSON-ready twin of :func:`freeze` (times and bytes converted)."""
    return to_plain(value)


# The form digests had before RFC 8785; replaced by the canonical-form change.
legacy_digest = digest
