"""Untrusted JSON text read within the limits: :func:`parse_json` parses it without ever
raising and hands the result to :func:`stopline.core.limits.check`.

Text that is not JSON, too long, nested beyond what the parser follows, or holding
``NaN``/``Infinity``, ``1e999``, an integer of thousands of digits or a key given twice comes
back as violations (the codes of :mod:`.limits`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from .limits import (
    BYTES,
    DEFAULT,
    DEPTH,
    INTEGER_RANGE,
    NOT_FINITE,
    SYNTAX,
    TYPE,
    UNICODE,
    DuplicateKeys,
    Limits,
    Unparsed,
    Violation,
    check,
    show,
)


def _parse_int(text: str) -> int | Unparsed:
    if len(text) > 20:  # far outside ±(2**53 - 1); int() refuses past 4300 digits anyway
        return Unparsed(INTEGER_RANGE, f"integer of {len(text.lstrip('-'))} digits")
    return int(text)


def _parse_float(text: str) -> float | Unparsed:
    value = float(text)
    if math.isfinite(value):
        return value
    return Unparsed(NOT_FINITE, f"{show(text)} is beyond the range of a double")


def _parse_constant(name: str) -> Unparsed:
    return Unparsed(NOT_FINITE, f"{name} is not a number JSON allows")


def _parse_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    duplicates: dict[str, None] = {}
    for key, _ in pairs:
        if key in seen:
            duplicates[key] = None
        seen.add(key)
    return DuplicateKeys(pairs, list(duplicates))


_DECODER = json.JSONDecoder(
    object_pairs_hook=_parse_object,
    parse_int=_parse_int,
    parse_float=_parse_float,
    parse_constant=_parse_constant,
)


def parse_json(text: str | bytes, limits: Limits = DEFAULT) -> tuple[Any, list[Violation]]:
    """Parse untrusted JSON text and :func:`check` the result. Never raises.

    Bytes must be UTF-8. Text that is not JSON, longer than ``max_text_bytes``, nested beyond
    what the parser follows, or holding ``NaN``/``Infinity``, ``1e999``, an integer of
    thousands of digits or a key given twice comes back as violations. Use the value only when
    the list is empty (otherwise it is ``None`` or holds placeholders).
    """
    at = "$"
    if isinstance(text, bytes | bytearray | memoryview):
        raw = bytes(text)
        if len(raw) > limits.max_text_bytes:
            return None, [_too_long(len(raw), limits)]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, [Violation(at, UNICODE, f"not UTF-8: invalid byte at offset {exc.start}")]
    elif isinstance(text, str):
        if len(text) > limits.max_text_bytes or (
            len(text) * 4 > limits.max_text_bytes
            and len(text.encode("utf-8", "surrogatepass")) > limits.max_text_bytes
        ):
            return None, [_too_long(len(text.encode("utf-8", "surrogatepass")), limits)]
    else:
        return None, [
            Violation(at, TYPE, f"JSON text must be str or bytes, not {type(text).__name__}")
        ]
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        return None, [Violation(at, DEPTH, f"nested deeper than {limits.max_depth}")]
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        return None, [Violation(at, SYNTAX, f"not JSON: {exc.msg} at {where}")]
    except (ValueError, TypeError, MemoryError) as exc:
        return None, [Violation(at, SYNTAX, f"not JSON: {type(exc).__name__}")]
    return value, check(value, limits)


def _too_long(size: int, limits: Limits) -> Violation:
    return Violation("$", BYTES, f"JSON text of {size} bytes; at most {limits.max_text_bytes}")
