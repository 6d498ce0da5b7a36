"""The digest of the hot path (the event hash of every transition): a C encoder writes the
text and one pass over the value confirms RFC 8785 writes nothing in it differently. orjson
writes values without floats (most of what stopline digests: strings, integers, times);
json's C encoder writes the others, its floats mended. Equal to
:func:`stopline.core.canonical.digest` for every value (a property test holds them together).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from json.encoder import encode_basestring
from typing import Any

import orjson

from .canonical import (
    MAX_SAFE_INTEGER,
    CanonicalError,
    bytes_object,
    canonical_json,
    format_float,
    format_time,
    lone_surrogate,
)
from .frozen import FrozenDict


def _canonical_default(value: Any) -> Any:
    """What the C encoder cannot write itself, turned plain by the :func:`to_plain` rules."""
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes_object(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    plain = getattr(value, "to_plain", None)
    if callable(plain):
        return plain()
    raise CanonicalError(f"{type(value).__name__} has no canonical form")


_C_CANONICAL = json.JSONEncoder(
    default=_canonical_default,
    sort_keys=True,
    separators=(",", ":"),
    ensure_ascii=False,
    allow_nan=False,
)


_C_TEXT_OK, _C_TEXT_FLOATS, _C_TEXT_WRONG = 0, 1, 2


def _c_text_status(value: Any, *, floats: bool = False) -> int:
    """How json's C encoder wrote ``value`` (already encoded by it, so acyclic) against RFC 8785.

    Its text differs only through: a key that is not a string (written as a string), an integer
    outside ±(2**53 - 1), keys sorted by code point where RFC 8785 sorts by UTF-16 code units
    (the orders differ only for a key holding a character at or above U+E000): all
    ``_C_TEXT_WRONG``, left to the exact serialiser, as is any type it does not know here; and
    a float that ``repr`` writes as an integer (``1.0``) or with an exponent (``1e-05``):
    ``_C_TEXT_FLOATS``, which :func:`_refit_floats` mends in the text. ``floats``: every float
    is ``_C_TEXT_FLOATS`` (for orjson's text, whose floats are not ``repr``'s).
    """
    status = _C_TEXT_OK
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is dict or kind is FrozenDict:
            try:
                ascii_keys = all(map(str.isascii, item))  # TypeError: a key is not a string
            except TypeError:
                return _C_TEXT_WRONG
            if not ascii_keys and any(key and max(key) >= "\ue000" for key in item):
                return _C_TEXT_WRONG
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                return _C_TEXT_WRONG
        elif kind is float:
            text = float.__repr__(item)
            if floats or "e" in text or text.endswith(".0"):
                status = _C_TEXT_FLOATS
        elif not isinstance(item, str | datetime | bytes | bytearray | memoryview):
            return _C_TEXT_WRONG
    return status


# A JSON string as the C encoder writes it (no raw quote or backslash inside but escapes), and
# a float token that repr writes otherwise than RFC 8785: with an exponent, or integral ("2.0").
_JSON_STRING = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")', re.DOTALL)


_REPR_FLOAT = re.compile(r"(?<![0-9.])-?[0-9]+(?:\.0(?![0-9])|(?:\.[0-9]+)?e[+-][0-9]+)")


def _es_float(match: re.Match[str]) -> str:
    return format_float(float(match.group()))  # float(repr(x)) is x


def _refit_floats(text: str) -> str:
    """The C encoder's text with every float rewritten in the RFC 8785 form; strings untouched."""
    parts = _JSON_STRING.split(text)  # even indexes: between strings; odd: the strings
    for i in range(0, len(parts), 2):
        if "." in parts[i] or "e" in parts[i]:
            parts[i] = _REPR_FLOAT.sub(_es_float, parts[i])
    return "".join(parts)


def fast_canonical(value: Any) -> str:
    """The text :func:`canonical_json` writes for ``value``, by a C encoder where that writes
    the same (see :func:`fast_digest`); a lone surrogate is left in the text, for the caller's
    UTF-8 encoding to refuse."""
    written = _orjson_text(value)
    if written is not None:
        return written.decode("utf-8")
    return _json_text(value)


def _orjson_text(value: Any) -> bytes | None:
    """The canonical text of ``value`` as UTF-8, written by orjson, when that is exactly what
    RFC 8785 writes: a value of strings, safe integers, booleans, ``None``, times, bytes and
    containers, with no float anywhere (orjson writes some floats otherwise than RFC 8785, and
    NaN as ``null``) and no key a code point order would put wrong. ``None``: go the
    :func:`_json_text` way. orjson refuses what json's C encoder would (a cycle, a value too
    deep, a key that is not a string, a lone surrogate), so the walk that follows is over an
    acyclic value."""
    try:
        text = orjson.dumps(value, default=_canonical_default, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None
    return text if _c_text_status(value, floats=True) == _C_TEXT_OK else None


_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME


def _json_text(value: Any) -> str:
    try:
        text = _C_CANONICAL.encode(value)
    except (ValueError, TypeError, RecursionError):
        # NaN, a circular or very deep value: the exact serialiser refuses it with the precise
        # reason (or, for a deep value, writes it: it does not recurse).
        return canonical_json(value)
    status = _c_text_status(value)
    if status == _C_TEXT_WRONG:
        return canonical_json(value)
    if status == _C_TEXT_FLOATS:
        text = _refit_floats(text)
    return text


def members_text(value: Mapping[str, Any], keys: Iterable[tuple[str, str]]) -> str | None:
    """The canonical text of the members ``keys`` of ``value`` (each key with its JSON text, in
    RFC 8785 order) as an object, written without a walk when each holds a string or a safe
    integer; ``None`` when one holds anything else (the caller goes the general way). A lone
    surrogate is left in the text, for the digest's UTF-8 encoding to refuse."""
    members = []
    for key, quoted in keys:
        member: Any = value.get(key)
        kind = type(member)
        if kind is str:
            members.append(f"{quoted}:{encode_basestring(member)}")
        elif kind is int and -MAX_SAFE_INTEGER <= member <= MAX_SAFE_INTEGER:
            members.append(f"{quoted}:{int.__repr__(member)}")
        else:
            return None
    return "{" + ",".join(members) + "}"


def text_digest(text: str) -> str:
    """``sha256`` of canonical text, refusing a lone surrogate as :func:`digest` does."""
    try:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
    except UnicodeEncodeError:
        raise lone_surrogate() from None


def fast_digest(value: Any) -> str:
    """:func:`digest` for the hot path (the event hash of every transition).

    orjson writes the text of a value without floats (:func:`_orjson_text`), json's C encoder
    that of any other; one pass over the value confirms that RFC 8785 writes nothing in it
    differently (see :func:`_c_text_status`). Floats that ``repr`` writes differently are
    rewritten in json's text; the rare value with another difference (a key above
    U+E000, an integer out of range, a type the pass does not know) is written again by
    :func:`canonical_json`. Equal to ``digest(value)`` for every value, refusals included (a
    property test holds them together).
    """
    written = _orjson_text(value)
    if written is not None:
        return hashlib.sha256(written).hexdigest()
    return text_digest(_json_text(value))
