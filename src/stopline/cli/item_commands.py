"""The item commands of ``stopline``, generated from the command table.

Each table entry the CLI exposes becomes a subcommand: ``ITEM``, ``--actor`` when the command
names one, one flag per field, ``--idempotency-key`` when it takes one and ``--app`` when it
talks to the target first. The values are checked by the table's one check
(:func:`stopline.commands.table.validate`), as a JSON body is; a problem is exit status 2.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..commands.entry import AUTHOR, Entry, Shell, check_idempotency_key, validate
from ..commands.fields import ABSENT, Field, Type, from_text
from ..commands.runners import RunOptions
from ..commands.table import exposed
from .errors import UsageError
from .options import add_key_option

if TYPE_CHECKING:
    from ..store import Store
    from .output import Out

Handler = Callable[[argparse.Namespace, "Store", "Out"], int]
AddParser = Callable[
    [str, Handler, str, Sequence[argparse.ArgumentParser]], argparse.ArgumentParser
]


TRUST = (
    "The CLI trusts --actor: anyone who can run stopline against this database can act as any"
    " registered actor (one shell can approve as alice and then as bob). The actor registry"
    " checks roles and separation of duties, not who typed the command. Until signed mode"
    " exists, give database access only to the people the registry names; the web inbox and"
    " the HTTP API authenticate each person by token."
)


def nonempty(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


def dest(field: Field) -> str:
    return f"field_{field.name}"


def add_field(parser: argparse.ArgumentParser, field: Field) -> None:
    options: dict[str, Any] = {"dest": dest(field), "help": field.help}
    if field.type is Type.BOOL:
        parser.add_argument(field.cli_flag, action="store_true", **options)
        return
    options["required"] = field.required
    if field.limits.choices:
        options["choices"] = list(field.limits.choices)
    else:
        options["metavar"] = field.placeholder
    if field.type is Type.KEYS:
        options["action"] = "append"
    elif field.type is Type.INT:
        options["type"] = int
    parser.add_argument(field.cli_flag, **options)


def body_of(entry: Entry, args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    """The flags given, as the JSON body of the same command."""
    body: dict[str, Any] = {}
    problems: list[str] = []
    for field in entry.fields:
        raw = getattr(args, dest(field))
        if raw is None or raw is False:
            continue
        if field.type is Type.OBJECT:
            value, found = from_text(field, [raw], field.cli_flag)
            problems += found
            if value is not ABSENT:
                body[field.name] = value
        else:
            body[field.name] = raw
    declared = {part: getattr(args, f"author_{part}", None) for part in ("kind", "name", "family")}
    if any(v is not None for v in declared.values()):
        body[AUTHOR] = {part: value for part, value in declared.items() if value is not None}
    return body, problems


def handler(entry: Entry) -> Handler:
    def run(args: argparse.Namespace, store: Store, out: Out) -> int:
        from ..commands.perform import perform
        from ..controller import Controller
        from .signing import controller_for, host_trust

        body, problems = body_of(entry, args)
        fields, more = validate(entry, body)
        problems += more
        key: str | None = getattr(args, "idempotency_key", None)
        key_problem = check_idempotency_key(key, "--idempotency-key")
        if key_problem:
            problems.append(key_problem)
        if problems:
            raise UsageError("; ".join(problems))
        actor = getattr(args, "actor", None)
        if entry.takes_actor:
            controller = controller_for(store, args, actor)
        else:
            controller = Controller(store, trust=host_trust())
        options = RunOptions(key, getattr(args, "app", None))
        done = perform(controller, entry, args.item, actor=actor, fields=fields, options=options)
        if done.problems:
            raise UsageError("; ".join(done.problems))
        return out.decision(done, controller)

    return run


AUTHOR_HELP = (
    "who wrote the command: human (the default), ai or automation; recorded in the history as"
    " data, never a source of authority"
)


def add_author_options(parser: argparse.ArgumentParser) -> None:
    """``--author-kind``, ``--author-name`` and ``--author-family``: the author a caller
    declares (an AI names itself and its model family)."""
    parser.add_argument("--author-kind", choices=["human", "ai", "automation"], help=AUTHOR_HELP)
    parser.add_argument(
        "--author-name", metavar="NAME", help="with --author-kind ai: the name the AI declares"
    )
    parser.add_argument(
        "--author-family",
        metavar="FAMILY",
        help="with --author-kind ai: the model family the AI declares",
    )


def add_item_commands(add: AddParser, keyed: argparse.ArgumentParser) -> None:
    """One subcommand for every entry the CLI exposes, in table order."""
    for entry in exposed(Shell.CLI):
        p = add(entry.name, handler(entry), entry.help, [keyed] if entry.idempotent else [])
        p.add_argument("item", metavar="ITEM", help="item id or AUTOMATION/KEY")
        if entry.takes_actor:
            p.epilog = TRUST
            p.add_argument(
                "--actor",
                required=True,
                type=nonempty,
                help="who acts (checked against the actor registry, not authenticated: see below)",
            )
            add_key_option(p)
            add_author_options(p)
        for field in entry.fields:
            add_field(p, field)
        if entry.runner.needs_target:
            p.add_argument(
                "--app",
                metavar="APP",
                help="the automations (for the target); env STOPLINE_APP",
                default=os.environ.get("STOPLINE_APP"),
            )
