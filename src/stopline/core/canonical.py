"""Canonical JSON (RFC 8785, the JSON Canonicalization Scheme) and SHA-256 digests.

Every digest stopline shows (proposal, evidence, artifact content, QA, review packet, revision
request, event hash) is ``sha256(canonical_json(value))`` written as lowercase hex. The canonical
form is RFC 8785, so anyone can recompute a digest from ``stopline show --json`` with any JCS
implementation, in any language:

* objects have string keys, sorted by their UTF-16 code units; arrays keep their order;
* UTF-8, no insignificant whitespace; strings escape only ``"``, ``\\`` and the control
  characters (``\\b \\t \\n \\f \\r``, the others as ``\\u00xx``), everything else is kept as is;
* numbers are written as ECMAScript writes them (``1.0`` -> ``1``, ``1e-7`` -> ``1e-7``,
  ``1e21`` -> ``1e+21``, ``0.00001`` -> ``0.00001``); integers must lie within
  ±(2**53 - 1), the range a JSON number represents exactly everywhere;
* NaN, infinities, strings with lone surrogates and non-string keys are refused.

Before a value is serialised, these rules make it plain JSON (:func:`to_plain`):

* times (``datetime``) must be timezone-aware and become RFC 3339 UTC strings with microseconds,
  ``"2026-11-29T21:39:20.000000Z"``;
* bytes become ``{"$bytes": "<standard base64>"}``;
* tuples are arrays; ``None``, ``True`` and ``False`` are ``null``, ``true`` and ``false``;
* an object with a ``to_plain()`` method is serialised as what it returns.

Anything else (sets, decimals, naive times) raises :class:`CanonicalError`: a digest is never
computed over a value that two readers could serialise differently.

Digests made before RFC 8785 (the *legacy* form: keys sorted by code point, floats as Python's
``repr``, integers of any size) are still recognised (:mod:`stopline.core.legacy_form`); every
new digest is RFC 8785.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer every JSON reader holds exactly (an IEEE 754 double's 53-bit mantissa)."""


class CanonicalError(ValueError):
    """A value has no canonical JSON form."""


def format_time(value: datetime) -> str:
    """RFC 3339 UTC with microseconds, the one time format of stopline."""
    # Only a UTC time of the class itself is cached: a subclass may define equality its own way,
    # and two times in a zone with daylight saving compare (and hash) equal across a fold
    # (01:30 before and after the clocks go back) though they are an hour apart.
    if value.tzinfo is UTC and type(value) is datetime:
        return _format_remembered(value)
    return _format_time(value)


def _format_time(value: datetime) -> str:
    if value.tzinfo is not UTC:
        if value.tzinfo is None or value.utcoffset() is None:
            raise CanonicalError("naive datetime has no canonical form; pass a timezone-aware time")
        value = value.astimezone(UTC)
    return value.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


# A transition formats the same few times (created, updated, eligible, the clock's now) dozens
# of times over (row parameters, seals, event hashes): a cache makes that a dictionary lookup.
_format_remembered = functools.lru_cache(maxsize=4096)(_format_time)


def json_number(value: float) -> float | int:
    """``value`` as an integer when it is one that RFC 8785 writes without a fraction anyway
    (``3600.0`` is ``3600``): the same digest, and a value the digest's C encoders write as it
    is, where a float takes the slower way that mends its text."""
    if value.is_integer() and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return int(value)
    return value


def parse_time(text: str) -> datetime:
    """Inverse of :func:`format_time` (accepts any RFC 3339 time with an offset)."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        raise CanonicalError(f"time without offset: {text!r}")
    return value.astimezone(UTC)


def bytes_object(value: bytes | bytearray | memoryview) -> dict[str, str]:
    return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}


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
        return bytes_object(value)
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


# --- RFC 8785 ----------------------------------------------------------------------------------


def format_integer(value: int) -> str:
    """An integer as RFC 8785 writes it; outside ±(2**53 - 1) it is refused."""
    if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return int.__repr__(value)
    # Never format the integer itself: past 4300 digits str() raises ValueError.
    raise CanonicalError(
        f"integer of {value.bit_length()} bits is outside ±(2**53 - 1), "
        "the range a JSON number holds exactly"
    )


def format_float(value: float) -> str:
    """A finite float as ECMAScript's ``Number.prototype.toString`` writes it (RFC 8785 3.2.2.3).

    Python's ``repr`` and ECMAScript both write the shortest digit string that reads back as
    the same double; they differ only in layout, which is rebuilt here from ``repr``'s digits.
    """
    if not math.isfinite(value):
        raise CanonicalError("NaN and infinities have no canonical form")
    if value == 0:
        return "0"  # and -0.0 too, as ECMAScript writes it
    text = float.__repr__(value)
    if "e" not in text:
        # repr writes 1e-4 <= |x| < 1e16 positionally, as ECMAScript does (1e-6 <= |x| < 1e21),
        # with the same digits; only an integral value's trailing ".0" goes.
        return text[:-2] if text.endswith(".0") else text
    sign = "-" if text[0] == "-" else ""
    mantissa, _, exponent = text.lstrip("-").partition("e")
    digits = mantissa.replace(".", "")  # repr's mantissa is "d" or "d.ddd", no trailing zeros
    k = len(digits)
    n = int(exponent) + 1  # the value is 0.<digits> * 10**n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    fraction = "." + digits[1:] if k > 1 else ""
    return f"{sign}{digits[0]}{fraction}e{'+' if e > 0 else '-'}{abs(e)}"


# json's C string encoder escapes exactly what RFC 8785 escapes (", \, control characters, with
# lowercase hex) and nothing else when ensure_ascii is off.
quote_string = json.encoder.encode_basestring
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate() -> CanonicalError:
    return CanonicalError("string holds a lone surrogate (U+D800..U+DFFF): not valid Unicode")


def _utf16_key(member: tuple[str, Any]) -> bytes:
    return member[0].encode("utf-16-be", "surrogatepass")


class _Text(str):
    """Text to emit as is (never a value: values of this type only come from here)."""

    __slots__ = ()


class _Close:
    """Leaves a container: emits its closing text and ends its cycle guard."""

    __slots__ = ("text", "value")

    def __init__(self, value: Any, text: str) -> None:
        self.value = value  # held so that its id is not reused while it is open
        self.text = text


_COMMA = _Text(",")


def canonical_json(value: Any) -> str:
    """The RFC 8785 text of ``value`` (after the :func:`to_plain` rules).

    Iterative, so a value of any depth is serialised (or refused) without a RecursionError.
    """
    out: list[str] = []
    stack: list[Any] = [value]
    open_ids: set[int] = set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is _Text:
            out.append(item)
        elif kind is _Close:
            open_ids.discard(id(item.value))
            out.append(item.text)
        elif item is None:
            out.append("null")
        elif item is True:
            out.append("true")
        elif item is False:
            out.append("false")
        elif isinstance(item, str):
            out.append(quote_string(item))
        elif isinstance(item, int):
            out.append(format_integer(item))
        elif isinstance(item, float):
            out.append(format_float(item))
        elif isinstance(item, datetime):
            out.append(quote_string(format_time(item)))
        elif isinstance(item, bytes | bytearray | memoryview):
            out.append('{"$bytes":' + quote_string(bytes_object(item)["$bytes"]) + "}")
        else:
            if id(item) in open_ids:
                raise CanonicalError("circular reference has no canonical form")
            if isinstance(item, Mapping):
                members: list[tuple[str, Any]] = []
                for key, member in item.items():
                    if not isinstance(key, str):
                        raise CanonicalError(
                            f"object key must be a string, not {type(key).__name__}"
                        )
                    members.append((key, member))
                members.sort(key=_utf16_key)
                open_ids.add(id(item))
                out.append("{")
                stack.append(_Close(item, "}"))
                for i in range(len(members) - 1, -1, -1):
                    key, member = members[i]
                    stack.append(member)
                    stack.append(_Text(quote_string(key) + ":"))
                    if i:
                        stack.append(_COMMA)
            elif isinstance(item, Sequence):
                open_ids.add(id(item))
                out.append("[")
                stack.append(_Close(item, "]"))
                elements = list(item)
                for i in range(len(elements) - 1, -1, -1):
                    stack.append(elements[i])
                    if i:
                        stack.append(_COMMA)
            else:
                plain = getattr(item, "to_plain", None)
                if not callable(plain):
                    raise CanonicalError(f"{kind.__name__} has no canonical form")
                open_ids.add(id(item))
                stack.append(_Close(item, ""))
                stack.append(plain())
    text = "".join(out)
    if not text.isascii() and _SURROGATE.search(text):
        raise lone_surrogate()
    return text


def digest(value: Any) -> str:
    """``sha256`` of the canonical JSON of ``value``, lowercase hex."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
