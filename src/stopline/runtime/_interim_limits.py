"""A stand-in for ``stopline.core.limits.check`` until that module is on main.

Same interface (``check(value, path="$") -> list[Violation]``, ``Violation(path, limit,
detail)``, never raising, never recursing) and the same default limits for what a hook may
return. ``hook_output.limit_violations`` is its only caller: when ``core.limits`` lands, that
function imports ``check`` from there and this file is deleted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

MAX_DEPTH = 64
MAX_BYTES = 1 << 20
MAX_STRING_LENGTH = 256 * 1024
MAX_MEMBERS = 10_000
MAX_SAFE_INTEGER = 2**53 - 1
MAX_VIOLATIONS = 20


@dataclass(frozen=True)
class Violation:
    path: str
    limit: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.limit}: {self.detail}"


def check(value: Any, path: str = "$") -> list[Violation]:
    found: list[Violation] = []
    try:
        _walk(value, path, found)
    except Exception as exc:  # a hostile object (a raising __len__ or items()): still an answer
        found.append(Violation(path, "type", f"cannot be inspected: {type(exc).__name__}"))
    return found[: MAX_VIOLATIONS + 1]


def _walk(value: Any, root: str, found: list[Violation]) -> None:
    size = 0
    stack: list[tuple[Any, str, int, bool]] = [(value, root, 0, False)]
    while stack and len(found) <= MAX_VIOLATIONS:
        item, at, depth, converted = stack.pop()
        if item is None or isinstance(item, bool):
            size += 5
        elif isinstance(item, str):
            size += len(item)
            if len(item) > MAX_STRING_LENGTH:
                found.append(Violation(at, "string_length", f"{len(item)} characters"))
            if not _valid_unicode(item):
                found.append(Violation(at, "unicode", "a lone surrogate: not valid Unicode"))
        elif isinstance(item, int):
            size += 20
            if abs(item) > MAX_SAFE_INTEGER:
                found.append(Violation(at, "integer_range", "outside ±(2**53 - 1)"))
        elif isinstance(item, float):
            size += 24
            if not math.isfinite(item):
                found.append(Violation(at, "not_finite", f"{item!r} is not a finite number"))
        elif isinstance(item, datetime):
            size += 30
            if item.tzinfo is None or item.utcoffset() is None:
                found.append(Violation(at, "type", "a time without a timezone"))
        elif isinstance(item, bytes | bytearray):
            size += 4 * len(item) // 3 + 16
        elif isinstance(item, Mapping | Sequence):
            if depth + 1 > MAX_DEPTH:
                found.append(Violation(at, "depth", f"nested deeper than {MAX_DEPTH}"))
                continue
            if len(item) > MAX_MEMBERS:
                found.append(Violation(at, "members", f"{len(item)} members"))
            members = list(item.items()) if isinstance(item, Mapping) else list(enumerate(item))
            for key, child in reversed(members[:MAX_MEMBERS]):
                if isinstance(item, Mapping) and not isinstance(key, str):
                    found.append(Violation(at, "key_type", f"a {type(key).__name__} key"))
                    continue
                if isinstance(key, str) and not _valid_unicode(key):
                    found.append(Violation(at, "unicode", "a key with a lone surrogate"))
                    continue
                size += len(key) + 4 if isinstance(key, str) else 1
                child_at = f"{at}.{key}" if isinstance(key, str) else f"{at}[{key}]"
                stack.append((child, child_at, depth + 1, False))
        elif not converted and callable(getattr(item, "to_plain", None)):
            stack.append((item.to_plain(), at, depth, True))
        else:
            found.append(Violation(at, "type", f"{type(item).__name__} has no JSON form"))
        if size > MAX_BYTES:
            found.append(Violation(root, "bytes", f"over {MAX_BYTES} bytes"))
            return


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
