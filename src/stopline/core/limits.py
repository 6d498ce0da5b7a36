"""The input boundary: documented limits for everything that reaches a record from outside.

Hook outputs, CLI arguments, API bodies, web forms and discovery keys all end up as JSON
documents in records. :func:`check` says whether a value stays within :class:`Limits`, naming
the path and the limit of every violation; :func:`stopline.core.json_input.parse_json` does the
same for untrusted JSON text. Both are pure and never raise, and neither recurses: a value
nested 100,000 deep is measured, not a RecursionError.

The limits apply to the canonical document a value becomes (``canonical.py``): bytes count as
``{"$bytes": "<base64>"}``, times as their RFC 3339 string, tuples as arrays. A value that
:func:`check` accepts is accepted by :func:`~stopline.core.canonical.canonical_json`, and its
canonical JSON is at most ``max_bytes`` long.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from .canonical import MAX_SAFE_INTEGER, format_float, format_time, quote_string

# The stable codes a violation names (docs/records.md lists them with the defaults).
DEPTH = "depth"
BYTES = "bytes"
STRING_LENGTH = "string_length"
KEY_LENGTH = "key_length"
MEMBERS = "members"
INTEGER_RANGE = "integer_range"
NOT_FINITE = "not_finite"
UNICODE = "unicode"
KEY_TYPE = "key_type"
DUPLICATE_KEY = "duplicate_key"
TYPE = "type"
SYNTAX = "syntax"
MORE = "..."
CODES = frozenset(
    {
        DEPTH,
        BYTES,
        STRING_LENGTH,
        KEY_LENGTH,
        MEMBERS,
        INTEGER_RANGE,
        NOT_FINITE,
        UNICODE,
        KEY_TYPE,
        DUPLICATE_KEY,
        TYPE,
        SYNTAX,
        MORE,
    }
)


MAX_TRACEBACK = 4000
"""Characters of a hook's traceback kept in an item's record (its last lines: the frames
nearest the error and the exception itself)."""


def truncate_traceback(text: str, limit: int = MAX_TRACEBACK) -> str:
    """At most ``limit`` characters of ``text``, its end kept; valid Unicode."""
    if len(text) > limit:
        text = "...\n" + text[-(limit - 4) :]
    return text.encode("utf-8", "replace").decode("utf-8")


@dataclass(frozen=True, slots=True)
class Limits:
    """What one document from outside may hold. Integers within ±(2**53 - 1), finite numbers,
    valid Unicode and string keys are not settings: the canonical form needs them."""

    max_depth: int = 64
    """Containers nested in one another: ``[]`` is 1 deep, ``{"a": [1]}`` 2."""
    max_bytes: int = 1 << 20
    """UTF-8 bytes of the document's canonical JSON (1 MiB)."""
    max_string_length: int = 256 * 1024
    """Characters (code points) in one string value (256 Ki)."""
    max_key_length: int = 256
    """Characters in one object key."""
    max_members: int = 10_000
    """Members of one object or elements of one array."""
    max_text_bytes: int = 8 << 20
    """Bytes of JSON text :func:`parse_json` reads at all (8 MiB: room for whitespace and
    ``\\u`` escapes around a document within ``max_bytes``); longer text is not parsed."""
    max_violations: int = 20
    """Violations listed before a final ``...`` entry says there are more."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if type(value) is not int or value < 1:
                raise ValueError(f"Limits.{f.name} must be a positive integer, not {value!r}")


DEFAULT = Limits()


@dataclass(frozen=True, slots=True)
class Violation:
    """One limit broken: where (a JSON path such as ``$.params.a[3]``), which limit (a code
    from :data:`CODES`), and a sentence for people."""

    path: str
    limit: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.limit}: {self.detail}"


class _Full(Exception):
    """The violation list is full (its final ``...`` entry is written)."""


class _Violations:
    def __init__(self, limits: Limits) -> None:
        self.items: list[Violation] = []
        self.room = limits.max_violations

    def add(self, path: str, limit: str, detail: str) -> None:
        if len(self.items) >= self.room:
            self.items.append(Violation(path, MORE, "more violations, not listed"))
            raise _Full
        self.items.append(Violation(path, limit, detail))


# --- paths --------------------------------------------------------------------------------------

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _segment(key: str | int) -> str:
    if isinstance(key, int):
        return f"[{key}]"
    if _IDENTIFIER.fullmatch(key):
        return "." + key
    shown = key if len(key) <= 64 else key[:64] + "..."
    return "[" + json.dumps(shown) + "]"  # ASCII, a lone surrogate escaped


class _Path:
    """A JSON path built only when a violation needs it (most nodes never do)."""

    __slots__ = ("key", "parent", "root")

    def __init__(self, parent: _Path | None, key: str | int, root: str = "") -> None:
        self.parent = parent
        self.key = key
        self.root = root

    def text(self) -> str:
        segments: list[str] = []
        node: _Path | None = self
        root = ""
        while node is not None:
            if node.parent is None:
                root = node.root
            else:
                segments.append(_segment(node.key))
            node = node.parent
        return root + "".join(reversed(segments))


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored as a plain text value (a name, a reference, a flag), or
    ``None``: a lone surrogate (a byte that was not UTF-8, as Python hands it over from a
    command line) is not valid Unicode, and a NUL character is refused by PostgreSQL's text
    columns. Pure; never raises."""
    if not isinstance(text, str):
        return f"must be text, not {type(text).__name__}"
    found = _SURROGATE.search(text)
    if found is not None:
        return (
            f"not valid Unicode: a lone surrogate {show(found.group())} at position"
            f" {found.start() + 1} (a byte that is not UTF-8?)"
        )
    if "\x00" in text:
        return f"holds a NUL character at position {text.index(chr(0)) + 1}"
    return None


MAX_ITEM_KEY = 200
"""Characters of an item's key (what discovery lists, what an agent names)."""


def item_key_problem(key: object) -> str | None:
    """Why ``key`` cannot be an item's key, or ``None``: it is text of the exact type ``str``
    (a subclass's own ``__len__`` and ``__contains__`` answer what they like), 1 to
    :data:`MAX_ITEM_KEY` characters, without a lone surrogate or a NUL, and in Unicode
    normalization form C: two keys one text to Unicode (``café`` composed, and with ``e`` and
    U+0301) can never be two items. Pure; never raises."""
    if type(key) is not str:
        return "must be text (of the type str itself)"
    if not key:
        return "is empty"
    if len(key) > MAX_ITEM_KEY:
        return f"is {len(key)} characters long; at most {MAX_ITEM_KEY}"
    problem = text_problem(key)
    if problem is None and not unicodedata.is_normalized("NFC", key):
        return "is not in Unicode normalization form C (NFC)"
    return problem


def show(text: str) -> str:
    """A string for a detail: short, ASCII, safe to print."""
    return ascii(text if len(text) <= 40 else text[:40] + "...")


# --- check -------------------------------------------------------------------------------------


class Unparsed:
    """A token :func:`parse_json` read but could not hold (``NaN``, ``1e999``, 5,000 digits)."""

    __slots__ = ("detail", "limit")

    def __init__(self, limit: str, detail: str) -> None:
        self.limit = limit
        self.detail = detail


class DuplicateKeys(dict[str, Any]):
    """An object :func:`parse_json` read with a key given more than once."""

    __slots__ = ("duplicates",)

    def __init__(self, pairs: list[tuple[str, Any]], duplicates: list[str]) -> None:
        super().__init__(pairs)
        self.duplicates = duplicates


def check(value: Any, limits: Limits = DEFAULT, path: str = "$") -> list[Violation]:
    """Every limit ``value`` breaks, in document order; empty when it is within ``limits``.

    At most ``limits.max_violations`` are listed, then one ``...`` entry. Below a container
    that is too deep nothing is inspected (the depth violation says enough), and only the
    first ``max_members`` members of an oversized container are. Never raises.
    """
    found = _Violations(limits)
    try:
        _walk(value, limits, _Path(None, 0, path), found)
    except _Full:
        pass
    except Exception as exc:  # a hostile object (a raising __len__ or items()): still an answer
        found.items.append(Violation(path, TYPE, f"cannot be inspected: {type(exc).__name__}"))
    return found.items


def _walk(value: Any, limits: Limits, root: _Path, found: _Violations) -> None:
    size = 0  # canonical UTF-8 bytes so far
    over = False
    # (value, path, depth of the containers around it, already converted by to_plain())
    stack: list[tuple[Any, _Path, int, bool]] = [(value, root, 0, False)]
    while stack:
        item, at, depth, converted = stack.pop()
        if item is None or item is True:
            size += 4
        elif item is False:
            size += 5
        elif isinstance(item, str):
            size += _string(item, limits, at, found)
        elif isinstance(item, int):
            if -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                size += len(int.__repr__(item))
            else:
                found.add(
                    at.text(),
                    INTEGER_RANGE,
                    f"integer of {item.bit_length()} bits is outside ±(2**53 - 1)",
                )
        elif isinstance(item, float):
            if math.isfinite(item):
                size += len(format_float(item))
            else:
                found.add(at.text(), NOT_FINITE, f"{item!r} is not a finite number")
        elif isinstance(item, datetime):
            try:
                size += _string(format_time(item), limits, at, found)
            except Exception:
                found.add(at.text(), TYPE, "a time without a timezone has no canonical form")
        elif isinstance(item, bytes | bytearray | memoryview):
            length = item.nbytes if isinstance(item, memoryview) else len(item)
            encoded = 4 * ((length + 2) // 3)
            size += 13 + encoded  # {"$bytes":"..."}
            if depth + 1 > limits.max_depth:
                found.add(at.text(), DEPTH, f"nested deeper than {limits.max_depth}")
            if len("$bytes") > limits.max_key_length:
                found.add(_Path(at, "$bytes").text(), KEY_LENGTH, "the key $bytes is too long")
            if encoded > limits.max_string_length:
                found.add(
                    _Path(at, "$bytes").text(),
                    STRING_LENGTH,
                    f"{encoded} base64 characters; at most {limits.max_string_length}",
                )
        elif isinstance(item, Unparsed):
            found.add(at.text(), item.limit, item.detail)
        elif isinstance(item, Mapping | Sequence):
            depth += 1
            if depth > limits.max_depth:
                found.add(at.text(), DEPTH, f"nested deeper than {limits.max_depth}")
                continue
            count = len(item)
            if count > limits.max_members:
                found.add(at.text(), MEMBERS, f"{count} members; at most {limits.max_members}")
            size += 2 + max(count - 1, 0)
            if isinstance(item, Mapping):
                size += _object(item, limits, at, depth, stack, found)
            else:
                children = [
                    (child, _Path(at, i), depth, False)
                    for i, child in zip(range(limits.max_members), item, strict=False)
                ]
                stack.extend(reversed(children))
        elif not converted and callable(getattr(item, "to_plain", None)):
            try:
                plain = item.to_plain()
            except Exception as exc:
                found.add(at.text(), TYPE, f"to_plain() raised {type(exc).__name__}")
            else:
                stack.append((plain, at, depth, True))
        else:
            found.add(at.text(), TYPE, f"{type(item).__name__} has no JSON form")
        if not over and size > limits.max_bytes:
            over = True
            found.add(root.text(), BYTES, f"canonical JSON over {limits.max_bytes} bytes")


def _string(text: str, limits: Limits, at: _Path, found: _Violations) -> int:
    """The canonical size of one string value, after checking it."""
    if len(text) > limits.max_string_length:
        found.add(
            at.text(),
            STRING_LENGTH,
            f"{len(text)} characters; at most {limits.max_string_length}",
        )
    return _quoted_size(text, at, found, "string")


def _quoted_size(text: str, at: _Path, found: _Violations, what: str) -> int:
    quoted = quote_string(text)
    if quoted.isascii():
        return len(quoted)
    if _SURROGATE.search(text):
        found.add(at.text(), UNICODE, f"{what} holds a lone surrogate: not valid Unicode")
    return len(quoted.encode("utf-8", "surrogatepass"))


def _object(
    item: Mapping[Any, Any],
    limits: Limits,
    at: _Path,
    depth: int,
    stack: list[tuple[Any, _Path, int, bool]],
    found: _Violations,
) -> int:
    """Check an object's keys, queue its members, and return the size of keys and colons."""
    size = 0
    if isinstance(item, DuplicateKeys):
        for key in item.duplicates[:3]:
            found.add(_Path(at, key).text(), DUPLICATE_KEY, "key given more than once")
    children: list[tuple[Any, _Path, int, bool]] = []
    for key, child in item.items():
        if len(children) >= limits.max_members:
            break
        if not isinstance(key, str):
            found.add(at.text(), KEY_TYPE, f"a key of type {type(key).__name__}, not a string")
            continue
        member = _Path(at, key)
        if len(key) > limits.max_key_length:
            found.add(
                member.text(),
                KEY_LENGTH,
                f"key of {len(key)} characters; at most {limits.max_key_length}",
            )
        size += 1 + _quoted_size(key, member, found, "key")
        children.append((child, member, depth, False))
    stack.extend(reversed(children))
    return size
