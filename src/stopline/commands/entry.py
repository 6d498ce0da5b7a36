"""What one entry of the command table is, and what every shell does with one: check the
fields it received (:func:`validate`, :func:`check_idempotency_key`) and run it
(:func:`execute`). The entries themselves are in :mod:`stopline.commands.table`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from ..core import commands as core
from ..core.authorship import author_from, author_problems
from ..core.decision import Decision
from ..core.records import Item
from ..core.rights import AUTHORITY, Authority
from ..core.transitions import Cmd
from .fields import MAX_KEY, Field, Type, check_value
from .runners import DECIDE, Runner, RunOptions

if TYPE_CHECKING:
    from ..controller import Controller


class Shell(StrEnum):
    CLI = "cli"
    HTTP = "http"
    WEB = "web"
    AGENT = "agent"


PEOPLE = frozenset({Shell.CLI, Shell.HTTP, Shell.WEB})


@dataclass(frozen=True)
class WebForm:
    title: str
    submit: str


@dataclass(frozen=True)
class Entry:
    cmd: Cmd
    command: type[core.Command]  # the core command it builds
    help: str
    fields: tuple[Field, ...] = ()
    shells: frozenset[Shell] = PEOPLE
    idempotent: bool = True  # takes an idempotency key
    runner: Runner = DECIDE
    suggest: bool = False  # offered as a next step in hints
    form: WebForm | None = None  # how the web inbox offers it

    @property
    def name(self) -> str:
        return self.cmd.value

    @property
    def takes_actor(self) -> bool:
        return issubclass(self.command, core.ActorCommand)

    @property
    def roles(self) -> Authority:
        """Who may run it (declared by the core: the transition table and its rights)."""
        return AUTHORITY[self.cmd]

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    def fillable(self, item: Item) -> bool:
        """Whether ``item`` can fill every field a person cannot type (see ``Field.fillable``)."""
        return all(f.fillable(item) for f in self.fields)

    def build(self, actor: str | None, fields: Mapping[str, Any]) -> core.Command:
        """The core command, from checked ``fields`` (absent ones take the core's default;
        :data:`AUTHOR`, the author the caller declared, absent: a person)."""
        values: dict[str, Any] = {}
        if AUTHOR in fields:
            values["author"] = author_from(fields[AUTHOR])
        for f in self.fields:
            if f.name in fields:
                value = fields[f.name]
                if f.type is Type.KEYS:
                    value = tuple(value)
                elif f.type is Type.OBJECT:
                    value = dict(value)
                values[f.core_name] = value
        if self.takes_actor:
            if not actor:
                raise ValueError(f"{self.name} needs an actor")
            values["actor"] = actor
        return self.command(**values)


# --- checking what a shell received -----------------------------------------------------------

# Not a field of any entry: every command that names an actor takes it. Who wrote the command,
# as its caller declares it (``{"kind", "name", "family"}``, core/authorship.py); recorded in
# the event as data, never a source of authority. Absent: a person (``human``).
AUTHOR = "author"


class HasFields(Protocol):
    """A command as a shell checks it: a people's command or an agent command."""

    @property
    def fields(self) -> tuple[Field, ...]: ...

    def field(self, name: str) -> Field | None: ...


def validate(entry: HasFields, body: Any) -> tuple[dict[str, Any], list[str]]:
    """The fields of ``body`` for ``entry``, and every problem found (empty when valid).

    ``body`` is a JSON object as the API receives it; the CLI and the web forms build one from
    their flags and form fields first."""
    if not isinstance(body, dict):
        return {}, ["the body must be a JSON object"]
    problems: list[str] = []
    takes_author = bool(getattr(entry, "takes_actor", False))  # agent commands take none
    for name in body:
        if name == "actor":
            problems.append("actor is not a field: the actor is the authenticated identity")
        elif name == AUTHOR and takes_author:
            problems += author_problems(body[name])
        elif entry.field(name) is None:
            problems.append(f"unknown field {name!r}")
    values: dict[str, Any] = {}
    for f in entry.fields:
        if f.name not in body:
            if f.required:
                problems.append(f"{f.name} is required")
            continue
        value = body[f.name]
        if f.type is Type.INT and isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON Schema: 3.0 is an integer
        found = check_value(f, value)
        problems += found
        if not found:
            values[f.name] = value
    if AUTHOR in body and takes_author and not problems:
        values[AUTHOR] = dict(body[AUTHOR])
    return values, problems


def check_idempotency_key(value: str | None, label: str = "Idempotency-Key") -> str | None:
    """A problem with an idempotency key, else ``None`` (every shell applies this rule)."""
    if value is None:
        return None
    if not 1 <= len(value) <= MAX_KEY or not all("!" <= c <= "~" for c in value):
        return f"{label} must be 1 to {MAX_KEY} printable ASCII characters, no spaces"
    return None


def execute(
    controller: Controller,
    entry: Entry,
    ref: str,
    *,
    actor: str | None,
    fields: Mapping[str, Any],
    options: RunOptions | None = None,
) -> Decision:
    """Build ``entry``'s core command from checked ``fields`` and run it on item ``ref``."""
    return entry.runner.run(controller, ref, entry.build(actor, fields), options or RunOptions())


# --- the table checks itself at import time, as the transition table does ----------------------


class TableError(Exception):
    """The command table is malformed (raised at import time)."""


RESERVED_FLAGS = {
    "--db",
    "--json",
    "--actor",
    "--app",
    "--idempotency-key",
    "--help",
    "--author-kind",
    "--author-name",
    "--author-family",
}


def _problems(entry: Entry) -> Iterable[str]:
    if entry.command.name != entry.name:
        yield f"{entry.name} builds {entry.command.__name__} ({entry.command.name})"
    core_fields = {f.name: f for f in dataclasses.fields(entry.command)}
    names = [f.name for f in entry.fields]
    flags = [f.cli_flag for f in entry.fields]
    if len(set(names)) != len(names) or len(set(flags)) != len(flags):
        yield f"{entry.name} repeats a field or a flag"
    for f in entry.fields:
        own = f.core_name in core_fields and f.core_name not in ("actor", AUTHOR, "attestation")
        if f.name in ("actor", AUTHOR) or not own:
            yield f"{entry.name}.{f.name} is not a field of {entry.command.__name__}"
        if f.cli_flag in RESERVED_FLAGS:
            yield f"{entry.name}.{f.name} takes a reserved flag {f.cli_flag}"
        if Shell.WEB in entry.shells and f.bound is None and not f.web.label:
            yield f"{entry.name}.{f.name} has no label for its form"
    given = {f.core_name for f in entry.fields if f.required}
    given |= {"actor"} if entry.takes_actor else set()
    for name, declared in core_fields.items():
        no_default = (
            declared.default is dataclasses.MISSING
            and declared.default_factory is dataclasses.MISSING
        )
        if no_default and name not in given:
            yield f"{entry.name} may leave {entry.command.__name__}.{name} unfilled"
    if Shell.WEB in entry.shells and entry.form is None:
        yield f"{entry.name} is offered on the web without a form"
    if Shell.AGENT in entry.shells:  # the agent commands are in agent_table.py
        yield f"{entry.name} is a people's command: no agent shell may offer it"


def check_table(entries: tuple[Entry, ...]) -> None:
    """Refuse a table whose entries do not fit the core (called when the table is built)."""
    problems = [p for e in entries for p in _problems(e)]
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        problems.append("a command is declared twice")
    missing = sorted(c.value for c in AUTHORITY if c.value not in names)
    problems += [f"the core has {name} but the table does not" for name in missing]
    if problems:
        raise TableError("; ".join(problems))
