"""Names of actors, roles and automations: one safe alphabet.

A name is first normalised with Unicode NFKC (so ``alice`` typed in fullwidth letters, U+FF41
and on, as an East Asian keyboard may, is ``alice``), then it must be:

* 1 to 64 characters of ``a-z``, ``0-9``, ``.``, ``_`` and ``-``; an actor name may also use
  ``@`` (``ops@example.org``);
* starting with a letter or a digit.

Everything else is refused, and the message names the first character that is not allowed, its
code point and Unicode name, and its position (1-based, in the normalised name).

Why this alphabet:

* **ASCII only.** Any character NFKC leaves outside ASCII is refused, so no accepted name can
  hold a letter of another script that looks like a Latin one (U+0430 CYRILLIC SMALL LETTER A
  beside the Latin ``a``). Two accepted names that differ, differ in ASCII characters.
* **Lower case only, refused rather than folded.** ``Alice`` is refused with a hint to write
  ``alice``: folding it silently would make two spellings of one name, and a name is shown in
  audit records exactly as it is stored.
* **No ``/``**: an item is named ``AUTOMATION/KEY`` and split at the first ``/``, so an automation
  name must not contain one (a key may). **No ``:``**: the proposer of an automation's proposals
  is recorded as ``automation:NAME``, so no actor can be named like it. **No whitespace or
  control characters**: a name is typed on command lines and printed in tables.

Within ASCII some characters still look alike in many fonts (``1`` and ``l``, ``0`` and ``o``,
``rn`` and ``m``, ``vv`` and ``w``). :func:`skeleton` maps each such group to one form, and the
actor registry refuses a new actor whose skeleton equals that of another registered actor
(:func:`lookalike`).

A person's input (``stopline actors add``) is normalised; a name declared in code (an
``Automation``, an ``App``'s actors, a policy's roles) must already be in normal form
(:func:`require_normal`). :func:`name_problem` reports a stored name that breaks these rules.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

ACTOR = "actor"
ROLE = "role"
AUTOMATION = "automation"
KINDS = (ACTOR, ROLE, AUTOMATION)

MAX_LENGTH = 64
_BASE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789._-")
_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_ALLOWED = {ACTOR: _BASE | {"@"}, ROLE: _BASE, AUTOMATION: _BASE}
_SHOWN = {ACTOR: "a-z 0-9 . _ - @", ROLE: "a-z 0-9 . _ -", AUTOMATION: "a-z 0-9 . _ -"}
_WHY = {
    "/": " ('/' separates AUTOMATION/KEY)",
    ":": " (':' is kept for automation:NAME)",
}
# Groups of ASCII look-alikes, longest first: each is replaced by the form on its right.
_LOOKALIKES = (("rn", "m"), ("vv", "w"), ("1", "l"), ("0", "o"))


class InvalidName(ValueError):
    """A name outside the safe alphabet; the message says what is allowed and what was wrong."""

    def __init__(self, kind: str, given: object, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.given = given


def normalise(name: str) -> str:
    """The NFKC form of ``name`` (the first step of every check)."""
    return unicodedata.normalize("NFKC", name)


def describe(char: str) -> str:
    """``U+0430 CYRILLIC SMALL LETTER A``; a control character is ``U+0000 <control>``."""
    return f"U+{ord(char):04X} {unicodedata.name(char, '<control>')}"


def _problem(kind: str, name: object) -> str | None:
    """Why ``name`` (as typed) is not a valid ``kind`` name after NFKC; ``None`` if it is."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of name {kind!r}; one of {', '.join(KINDS)}")
    rule = f"{kind} names use {_SHOWN[kind]}, 1-{MAX_LENGTH} characters"
    if not isinstance(name, str):
        return f"a {kind} name must be text, not {type(name).__name__}; {rule}"
    normal = normalise(name)
    shown = repr(name) if normal == name else f"{name!r} (NFKC: {normal!r})"
    if not normal:
        return f"an empty {kind} name; {rule}"
    if len(normal) > MAX_LENGTH:
        return f"{normal[:24]!r}... has {len(normal)} characters; {rule}"
    for position, char in enumerate(normal, start=1):
        if char in _ALLOWED[kind]:
            continue
        found = f"{shown} has {describe(char)} at position {position}"
        lower = normal.lower()
        if char.isupper() and _problem(kind, lower) is None:
            return f"{found}; {kind} names are lower case: write {lower!r}"
        return f"{found}; {rule}{_WHY.get(char, '')}"
    if normal[0] not in _FIRST:
        return f"{shown} starts with {describe(normal[0])}; {kind} names start with a-z or 0-9"
    return None


def check_name(kind: str, name: str) -> str:
    """The normalised ``name``, or :class:`InvalidName` saying exactly what is wrong."""
    problem = _problem(kind, name)
    if problem is not None:
        raise InvalidName(kind, name, problem)
    return normalise(name)


def check_actor_name(name: str) -> str:
    return check_name(ACTOR, name)


def check_role(name: str) -> str:
    return check_name(ROLE, name)


def check_automation_name(name: str) -> str:
    return check_name(AUTOMATION, name)


def require_normal(kind: str, name: str) -> str:
    """``name`` itself, if it is valid and already normalised (a name declared in code)."""
    normal = check_name(kind, name)
    if normal != name:
        raise InvalidName(kind, name, f"{kind} name {name!r} must be written {normal!r}")
    return name


def name_problem(kind: str, name: object) -> str | None:
    """Why a *stored* name is not acceptable (also: not in normal form); ``None`` if it is."""
    problem = _problem(kind, name)
    if problem is None and isinstance(name, str) and normalise(name) != name:
        return f"{name!r} is not in normal form; it is written {normalise(name)!r}"
    return problem


def skeleton(name: str) -> str:
    """One form for names that look alike in ASCII (``a1ice`` and ``alice`` share ``alice``)."""
    out = name
    for group, form in _LOOKALIKES:
        out = out.replace(group, form)
    return out


def lookalike(name: str, others: Iterable[str]) -> str | None:
    """Another name of ``others`` that looks like ``name`` (same skeleton), if there is one."""
    mine = skeleton(name)
    for other in sorted(others):
        if other != name and skeleton(other) == mine:
            return other
    return None


def lookalikes(names: Iterable[str]) -> list[tuple[str, str]]:
    """Every pair of distinct names that look alike, each pair sorted, sorted."""
    by_skeleton: dict[str, list[str]] = {}
    for name in sorted(set(names)):
        by_skeleton.setdefault(skeleton(name), []).append(name)
    return [
        (a, b)
        for group in by_skeleton.values()
        for i, a in enumerate(group)
        for b in group[i + 1 :]
    ]
