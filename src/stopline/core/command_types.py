"""Whether a command's values have the types its dataclass declares.

A shell checks every field against the command table before it builds a command, but the
command layer is also a library: a caller can build ``Reject(actor="a", reason=None)``. The
core refuses such a command ``invalid_input`` (``decide()``) instead of failing inside a rule
with an ``AttributeError``. Only the plain declared types are held here (text, flags,
integers, mappings, lists of text, each optionally ``None``); the rest is each rule's own.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any

from . import commands
from .commands import Command

Check = typing.Callable[[Any], bool]
_CORE = __name__.rpartition(".")[0] + "."  # stopline.core.


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _mapping(value: Any) -> bool:
    return isinstance(value, Mapping)


def _texts(value: Any) -> bool:
    return isinstance(value, tuple | list) and all(isinstance(v, str) for v in value)


def _record(kind: type) -> Check:
    return lambda value: isinstance(value, kind)


_PLAIN: dict[str, Check] = {
    "str": _text,
    "bool": _flag,
    "int": _integer,
    "Mapping[str, Any]": _mapping,
    "tuple[str, ...]": _texts,
}


def _instances(kind: type) -> Check:
    return lambda value: isinstance(value, tuple | list) and all(isinstance(v, kind) for v in value)


def _check_of(annotation: str) -> Check | None:
    """The check of a declared type written as ``annotation``, or ``None`` (not held here):
    the plain types above, and the core's own records (``Finding``, ``Observed``), alone or as
    ``tuple[X, ...]``."""
    optional = annotation.endswith(" | None")
    base = annotation.removesuffix(" | None")
    check = _PLAIN.get(base)
    if check is None:
        inner = base.removeprefix("tuple[").removesuffix(", ...]")
        record = getattr(commands, inner, None)
        if not isinstance(record, type) or not record.__module__.startswith(_CORE):
            return None
        check = _instances(record) if inner != base else _record(record)
    if optional:
        return lambda value: value is None or check(value)
    return check


_KNOWN: dict[type, tuple[tuple[str, Check], ...]] = {}


def _checks(kind: type[Command]) -> tuple[tuple[str, Check], ...]:
    known = _KNOWN.get(kind)
    if known is not None:
        return known
    found = []
    for f in dataclasses.fields(kind):
        annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        check = _check_of(annotation)
        if check is not None:
            found.append((f.name, check))
    _KNOWN[kind] = tuple(found)
    return _KNOWN[kind]


def wrong_types(command: Command) -> list[str]:
    """The fields of ``command`` whose values are not of their declared types."""
    return [name for name, check in _checks(type(command)) if not check(getattr(command, name))]
