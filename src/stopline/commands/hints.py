"""The command lines a person would type next on an item, from the command table.

A hint is offered for each entry marked ``suggest`` whose command the item's state allows
(:func:`stopline.core.rights.state_reasons`) and whose fields the item can fill: a value bound
to the item (a digest) must exist, and a required choice must have something to choose. The
actor and what only a person can say (the reason) stay placeholders.
"""

from __future__ import annotations

import json
import shlex

from ..core.records import Item
from ..core.rights import state_reasons
from ..core.transitions import Cmd
from .entry import Entry, Shell
from .fields import Field, Type
from .table import exposed


def _words(field: Field, item: Item) -> list[str]:
    """The words of one field in a hint: its value from the item, or a placeholder."""
    flag = field.cli_flag
    source = field.bound or field.prefill
    value = None if source is None else source(item)
    if value not in (None, [], ""):
        if field.type is Type.KEYS and isinstance(value, list):
            return [w for key in value for w in (flag, shlex.quote(str(key)))]
        if field.type is Type.OBJECT:
            return [flag, shlex.quote(json.dumps(value, sort_keys=True, ensure_ascii=False))]
        return [flag, shlex.quote(str(value))]
    if field.bound is not None:
        return []  # an optional binding the item does not have
    if field.type is Type.BOOL:
        return [f"[{flag}]"]
    if field.limits.choices:
        placeholder = '"' + "|".join(field.limits.choices) + '"'
    elif field.type is Type.TEXT and field.options is None:
        placeholder = f'"{field.placeholder}"'  # free text
    else:
        placeholder = field.placeholder
    return [flag, placeholder] if field.required else [f"[{flag} {placeholder}]"]


def hint(entry: Entry, item: Item) -> str:
    words = ["stopline", entry.name, item.id]
    if entry.takes_actor:
        words += ["--actor", "ACTOR"]
    for field in entry.fields:
        words += _words(field, item)
    return " ".join(words)


def next_commands(item: Item, *, sound: bool = True) -> list[str]:
    """The commands a person would type next (ACTOR and what they must say to fill in). Of a
    record that is not what its history sealed (``sound=False``), only ``close``: every other
    command on it is refused ``integrity_failed``."""
    out = []
    for entry in exposed(Shell.CLI):
        wanted = entry.suggest if sound else entry.cmd is Cmd.CLOSE
        if wanted and not state_reasons(item, entry.cmd) and entry.fillable(item):
            out.append(hint(entry, item))
    return out
