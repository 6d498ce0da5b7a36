"""The fields of a command: their types, their limits, and the one check of a value.

:func:`check_value` is the one place a field's value is checked against its type and limits,
whichever shell it came from (a JSON body, a CLI flag, a web form). :func:`from_text` is the
one place a value typed as text (a flag, a form field) becomes a typed value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..core import json_input, limits
from ..core.limits import text_problem
from ..core.records import Item

MAX_TEXT = 10_000
MAX_KEY = limits.MAX_ITEM_KEY
MAX_KEYS = 100
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


class Type(StrEnum):
    TEXT = "text"  # a string without NUL characters
    BOOL = "bool"
    INT = "int"
    OBJECT = "object"  # a JSON document whose top level is an object
    KEYS = "keys"  # a list of keys: a repeated CLI flag, one checkbox each in a form


@dataclass(frozen=True)
class Limits:
    """What a value must satisfy beyond its type (for a list: each of its elements)."""

    max_length: int | None = None  # characters
    min_length: int = 0  # 1: must not be empty
    not_blank: bool = False  # must hold a character that is not white space
    choices: tuple[str, ...] = ()  # one of these exactly
    minimum: int | None = None
    maximum: int | None = None
    min_items: int = 0
    max_items: int | None = None


FREE_TEXT = Limits(max_length=MAX_TEXT)
REASON = Limits(max_length=MAX_TEXT, not_blank=True)
KEY = Limits(min_length=1, max_length=MAX_KEY)
MIN_DIGEST_PREFIX = 12  # a digest may be typed as a prefix this long (commands/perform.py)
DIGEST = Limits(min_length=MIN_DIGEST_PREFIX, max_length=MAX_KEY)
KEY_LIST = Limits(min_length=1, max_length=MAX_KEY, min_items=1, max_items=MAX_KEYS)
INT32 = Limits(minimum=INT_MIN, maximum=INT_MAX)
JSON_DOCUMENT = Limits()  # any JSON object (its size is bounded by the request or argv)

# A value the item holds, for a field: what a form sends back or a hint fills in.
Source = Callable[[Item], Any]


@dataclass(frozen=True)
class Widget:
    """How the web inbox asks for a field (what it may hold is in the field's limits)."""

    label: str = ""
    rows: int = 2  # text areas
    min: int | None = None  # number inputs: a hint to the browser only
    testid: str = ""  # ``data-testid`` suffix (default: the field name)
    each_testid: str = ""  # checklists: the ``data-testid`` suffix of each box


@dataclass(frozen=True)
class Field:
    """One field of a command, as every shell sees it."""

    name: str  # the JSON body key and the form field name
    type: Type
    help: str
    limits: Limits = Limits()
    required: bool = False
    attr: str = ""  # the core command's attribute (default: ``name``)
    flag: str = ""  # the CLI flag (default: ``--name``)
    metavar: str = ""  # the placeholder in CLI help and hints (default: ``NAME``)
    bound: Source | None = None  # the item's own value (a hidden form field; filled in hints)
    prefill: Source | None = None  # a suggestion taken from the item
    options: Source | None = None  # the choices the item offers (a select or a checklist)
    web: Widget = Widget()

    @property
    def core_name(self) -> str:
        return self.attr or self.name

    @property
    def cli_flag(self) -> str:
        return self.flag or f"--{self.name}"

    @property
    def placeholder(self) -> str:
        return self.metavar or self.name.upper()

    def fillable(self, item: Item) -> bool:
        """Whether ``item`` gives this field what it needs: the value it is bound to, or
        something to choose (a command whose field is not fillable is not offered)."""
        if not self.required:
            return True
        if self.bound is not None and self.bound(item) is None:
            return False
        return self.options is None or bool(self.options(item))


def _text_problem(name: str, value: Any, limits: Limits) -> str | None:
    if not isinstance(value, str):
        return f"{name} must be a string"
    if "\x00" in value:
        return f"{name} must not contain NUL characters"
    not_text = text_problem(value)
    if not_text is not None:
        return f"{name} is {not_text}"
    if limits.max_length is not None and len(value) > limits.max_length:
        return f"{name} is longer than {limits.max_length} characters"
    if limits.not_blank and not value.strip():
        return f"{name} must not be empty"
    if len(value) < limits.min_length:
        if limits.min_length > 1:
            return (
                f"{name} is too short: give the whole digest or at least {limits.min_length}"
                " of its first characters (`stopline show` prints it)"
            )
        return f"{name} must not be empty"
    if limits.choices and value not in limits.choices:
        return f"{name} must be " + " or ".join(repr(c) for c in limits.choices)
    return None


def check_value(field: Field, value: Any, label: str = "") -> list[str]:
    """Every problem of ``value`` for ``field`` (empty: valid), named ``label`` (default: the
    field's name). The one place a field's value is checked against its type and limits."""
    name, limits = label or field.name, field.limits
    problem: str | None = None
    if field.type is Type.TEXT:
        problem = _text_problem(name, value, limits)
    elif field.type is Type.BOOL:
        problem = None if isinstance(value, bool) else f"{name} must be true or false"
    elif field.type is Type.OBJECT:
        problem = None if isinstance(value, dict) else f"{name} must be a JSON object"
    elif field.type is Type.INT:
        ok = isinstance(value, int) and not isinstance(value, bool)
        low = INT_MIN if limits.minimum is None else limits.minimum
        high = INT_MAX if limits.maximum is None else limits.maximum
        if not ok:
            problem = f"{name} must be an integer"
        elif not low <= value <= high:
            problem = f"{name} must be an integer from {low} to {high}"
    elif field.type is Type.KEYS:
        high = limits.max_items if limits.max_items is not None else MAX_KEYS
        if not isinstance(value, list) or not limits.min_items <= len(value) <= high:
            problem = f"{name} must be a list of {limits.min_items} to {high} keys"
        elif any(_text_problem(name, key, limits) for key in value):
            problem = (
                f"{name} must hold non-empty strings of at most {limits.max_length} characters"
            )
    return [problem] if problem else []


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str, label: str) -> tuple[Any, list[str]]:
    """A JSON document typed as text, within the input limits of docs/records.md (no NaN or
    infinities, integers within ±(2**53 - 1), valid Unicode, bounded depth and size), or the
    problems."""
    value, violations = json_input.parse_json(text)
    if violations:
        kind = "is not valid JSON" if violations[0].limit == limits.SYNTAX else "breaks the limits"
        return None, [f"{label} {kind}: " + "; ".join(map(str, violations))]
    return value, []


ABSENT: Any = object()
MAX_INT_DIGITS = 30  # far past any bound a field keeps, and far short of int()'s own limit


def from_text(field: Field, texts: Sequence[str], label: str = "") -> tuple[Any, list[str]]:
    """The value of ``field`` typed as ``texts`` (a repeated flag or form field gives several),
    or :data:`ABSENT` when an optional field was left empty; then every problem found."""
    name = label or field.name
    last = texts[-1] if texts else ""
    if field.type is Type.KEYS:
        return [t for t in texts if t], []
    if field.type is Type.BOOL:
        return last in ("1", "on", "true"), []
    if field.type in (Type.INT, Type.OBJECT) and not last.strip():
        return ABSENT, []
    if field.type is Type.INT:
        # ASCII digits with an optional sign: int() also reads "1_0", " 3 " and "\u0661"
        digits = last.removeprefix("-")
        if not digits.isascii() or not digits.isdigit() or len(digits) > MAX_INT_DIGITS:
            return ABSENT, [f"{name} must be an integer"]
        return int(last), []
    if field.type is Type.OBJECT:
        value, problems = parse_json(last, name)
        return (ABSENT, problems) if problems else (value, [])
    if not last and not field.required:
        return ABSENT, []
    return last, []
