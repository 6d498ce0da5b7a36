"""The text an inbox search matches for a stopped item, kept in its row (``search_text``).

A search of the web inbox (its box, ``/inbox?q=``) keeps the stopped items whose line contains
the text, case ignored: one line made of the item's automation/key and what says
why it stopped: the proposal's action, target and rationale, the report's summary, the
exception's owner and why, the last error's class and message, and a failed revision's reasons.
The store writes it with the row, so a search reads one column instead of building the line
from every stopped item's documents; like the inbox's other keys it decides nothing, and
``stopline verify`` recomputes it (``stop_key_mismatch``, field ``search_text``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .records import Item

# (top-level member of data, path inside it): the parts of the line, in its order
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("proposal", ("action",)),
    ("proposal", ("target",)),
    ("proposal", ("rationale",)),
    ("report", ("data", "summary")),
    ("exception", ("owner",)),
    ("exception", ("why",)),
    ("account", ("last_error", "class")),
    ("account", ("last_error", "message")),
    ("revision", ("failure", "reasons")),
)


def search_text(item: Item) -> str | None:
    """The lower-cased line a search matches, for an item in a stop state (``None`` for any
    other: only stopped items are searched). A NUL character a hook left in the texts is
    dropped: the line is kept in a text column, PostgreSQL refuses a NUL there, and no search
    holds one."""
    if not item.state.is_stop:
        return None
    parts = [f"{item.automation}/{item.key}"]
    data = item.data if isinstance(item.data, Mapping) else {}
    for member, path in PARTS:
        value: Any = data.get(member)
        for name in path:
            value = value.get(name) if isinstance(value, Mapping) else None
        parts.append(_text(value))
    return " ".join(parts).replace("\x00", "").lower()


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):  # a list of reasons: each that is text, in order
        return " ".join(v for v in value if isinstance(v, str))
    return ""
