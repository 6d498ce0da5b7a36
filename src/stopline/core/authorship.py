"""Who wrote an event: a person, an AI, or an automation (data, never authority).

Every event records its author in ``detail["author"]``: ``{"kind": "human"}``,
``{"kind": "automation"}`` or ``{"kind": "ai", "name": NAME, "family": FAMILY}`` (the name and
model family an AI declares for itself). The event hash covers it, so an edit is a ``verify``
finding. Nothing decides on it: rights, approvals and every rule of ``decide()`` look at the
actor and the roles the registry gives it, never at what kind of author it says it is.

Who the author is comes from where the event came from: a person's command is ``human``
unless its caller declares another kind; a worker's, the scheduler's and the sweeper's events
are ``automation``, whatever anyone declares.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

MAX_AUTHOR_TEXT = 200  # characters of a declared name or model family


class AuthorKind(StrEnum):
    HUMAN = "human"
    AI = "ai"
    AUTOMATION = "automation"


KINDS = tuple(k.value for k in AuthorKind)


@dataclass(frozen=True)
class Author:
    """An event's author: its kind, and for an AI its self-declared name and model family."""

    kind: str
    name: str = ""
    family: str = ""

    def to_plain(self) -> dict[str, str]:
        if self.kind == AuthorKind.AI:
            return {"kind": self.kind, "name": self.name, "family": self.family}
        return {"kind": self.kind}

    def declared(self) -> dict[str, str]:
        """This author as a declaration :func:`author_problems` checks: the kind, and a name
        and family where it is an AI's or where one was given."""
        found = {"kind": self.kind}
        for part in ("name", "family"):
            if self.kind == AuthorKind.AI or getattr(self, part):
                found[part] = getattr(self, part)
        return found


HUMAN = Author(AuthorKind.HUMAN.value)
AUTOMATION = Author(AuthorKind.AUTOMATION.value)


def _text_problem(label: str, value: Any) -> str | None:
    if not isinstance(value, str):
        return f"{label} must be a string"
    if not value.strip():
        return f"{label} must not be empty"
    if len(value) > MAX_AUTHOR_TEXT:
        return f"{label} is longer than {MAX_AUTHOR_TEXT} characters"
    if any(ord(c) < 0x20 or ord(c) == 0x7F or 0xD800 <= ord(c) <= 0xDFFF for c in value):
        return f"{label} must not contain control characters"
    return None


def author_problems(value: Any, label: str = "author") -> list[str]:
    """Every problem of a declared author ``{"kind", "name", "family"}`` (empty: valid).

    ``kind`` is one of human, ai, automation; an ``ai`` author names itself and its model
    family (1 to 200 characters each); the other kinds take neither, not even empty."""
    if not isinstance(value, Mapping):
        return [f"{label} must be a JSON object with kind, and name and family for an ai"]
    problems = [f"{label}.{k} is not a field" for k in value if k not in ("kind", "name", "family")]
    kind = value.get("kind")
    if kind not in KINDS:
        return [*problems, f"{label}.kind must be " + ", ".join(repr(k) for k in KINDS)]
    if kind == AuthorKind.AI:
        for part in ("name", "family"):
            problem = _text_problem(f"{label}.{part}", value.get(part))
            if problem:
                problems.append(problem)
    else:
        # present at all, even empty or null: the declaration is refused, as its schema says
        problems += [
            f"{label}.{part} is only for an ai author"
            for part in ("name", "family")
            if part in value
        ]
    return problems


def author_from(value: Mapping[str, Any]) -> Author:
    """The :class:`Author` of a declaration :func:`author_problems` found valid."""
    kind = str(value["kind"])
    if kind == AuthorKind.AI:
        return Author(kind, str(value["name"]), str(value["family"]))
    return Author(kind)


def event_author(detail: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The author an event records (``None``: an event written before authors were kept)."""
    found = detail.get("author")
    return found if isinstance(found, Mapping) else None


def author_text(author: Mapping[str, Any] | None) -> str:
    """One word or phrase for a history line: ``human``, ``automation``, ``ai NAME (FAMILY)``,
    or ``-`` for an event from before authors were kept."""
    if author is None:
        return "-"
    if author.get("kind") == AuthorKind.AI:
        return f"ai {author.get('name', '')} ({author.get('family', '')})"
    return str(author.get("kind", "-"))
