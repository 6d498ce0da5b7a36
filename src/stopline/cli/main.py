"""``stopline``: the command line. A thin shell over :class:`stopline.controller.Controller`.

Exit status: 0 applied or zero_write (and a clean verify), 3 refused (and a verify that found
problems, and a ``check`` that saw a stopped item move), 2 bad usage, malformed input or no
usable database, 4 the automations' own code failed (``run`` and ``check``: a discovery or a
hook raised, or returned what it may not), 1 an internal error.

Only ``migrate``, ``run``, ``demo`` and ``actors add`` create a database; every other command
needs one that exists (exit 2 and how to create it, otherwise).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence

from .. import __version__, logs
from ..core.limits import text_problem
from ..logs import ENV_FORMAT as ENV_LOG_FORMAT
from ..store import ENV_URL, Store, StoreError, database_url, open_store
from ..trust.authority import TrustError
from . import completion
from .admin_commands import cmd_actors, cmd_demo, cmd_migrate, cmd_run, cmd_serve
from .check import add_check_command
from .checkpoint import (
    add_checkpoint_command,
    add_since_option,
)
from .completion import SHELLS
from .errors import UsageError
from .item_commands import add_item_commands
from .keys import add_keys_commands, run_offline
from .mcp import add_mcp_command
from .output import EXIT_ERROR, EXIT_OK, EXIT_USAGE, Out
from .read_commands import cmd_history, cmd_items, cmd_show, cmd_verify
from .signing import add_key_option, host_trust
from .workers import add_workers_command

CONNECT_TIMEOUT = 5.0  # seconds: a database that does not answer by then is an error

# How a command opens the database: ``create`` (and migrate) it, need an ``existing`` migrated
# one, open it ``raw`` (serve checks the schema itself), or not at all (``none``).
CREATE, EXISTING, RAW, NONE = "create", "existing", "raw", "none"
# `run` opens (and creates, and migrates) its database itself, waiting while it is away
SELF = "self"


def cmd_completion(args: argparse.Namespace, store: None, out: Out) -> int:
    print(completion.script(build_parser(), args.shell), end="")
    return EXIT_OK


# --- the parser --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db", metavar="URL", help=f"database URL (env {ENV_URL}; default sqlite:///stopline.db)"
    )
    common.add_argument("--json", action="store_true", help="print exactly one JSON document")
    json_only = argparse.ArgumentParser(add_help=False)
    json_only.add_argument("--json", action="store_true", help="print exactly one JSON document")
    keyed = argparse.ArgumentParser(add_help=False)
    keyed.add_argument(
        "--idempotency-key",
        metavar="K",
        help="the same key with the same command is a zero-write replay",
    )

    parser = argparse.ArgumentParser(
        prog="stopline", description="A fail-closed controller for recurring automations."
    )
    parser.add_argument("--version", action="version", version=f"stopline {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(
        name: str,
        fn: Callable[..., int],
        help: str,
        parents: Sequence[argparse.ArgumentParser] = (),
        *,
        opens: str = EXISTING,
    ) -> argparse.ArgumentParser:
        shared = [common] if opens != NONE else [json_only]
        p = sub.add_parser(name, help=help, description=help, parents=[*shared, *parents])
        p.set_defaults(fn=fn, opens=opens)
        return p

    p = add(
        "demo",
        cmd_demo,
        "run the bundled example automations end to end and show where each item stopped",
        opens=CREATE,
    )
    p.add_argument("--linger", type=float, default=3.0, help=argparse.SUPPRESS)
    p.add_argument(
        "--fresh",
        action="store_true",
        help="start over: move an existing demo database aside first (kept as *.bak-N)",
    )
    p.add_argument(
        "--signed",
        action="store_true",
        help="the same walk in signed mode: a scratch trust root and keys in ./stopline-demo-keys",
    )

    p = add("run", cmd_run, "run workers and the scheduler for the automations in APP", opens=SELF)
    p.epilog = (
        "On a terminal it shows live progress; at the end a summary. Exit status 4 when a"
        " discovery or a hook raised (or returned what it may not): the items it touched stop"
        " in exception, and cron sees the failure. With STOPLINE_WEBHOOKS set, the webhook"
        " notifier runs too (docs/webhooks.md)."
    )
    p.add_argument("app", metavar="APP", help="module:attribute or path/to/file.py:attribute")
    p.add_argument("--once", action="store_true", help="run until nothing is due, then exit")
    p.add_argument(
        "--workers",
        type=int,
        default=int(os.environ.get("STOPLINE_WORKERS", "1")),
        help="worker processes (env STOPLINE_WORKERS; default 1)",
    )
    p.add_argument(
        "--concurrency",
        type=int,
        default=int(os.environ.get("STOPLINE_CONCURRENCY", "1")),
        help="items each worker process runs at once: plain hooks on threads, async hooks on"
        " an event loop (env STOPLINE_CONCURRENCY; default 1)",
    )
    p.add_argument(
        "--batch",
        type=int,
        default=int(os.environ.get("STOPLINE_BATCH", "1")),
        help="items each worker process claims in one statement and commits in one"
        " transaction (env STOPLINE_BATCH; default 1)",
    )
    p.add_argument(
        "--linger",
        type=float,
        default=5.0,
        help="with --once: wait this long for work that becomes due soon (seconds)",
    )
    p.add_argument(
        "--quiet", action="store_true", help="print nothing unless the automations' code failed"
    )
    add_since_option(p, env=True)
    add_log_format(p)

    p = add("items", cmd_items, "list items")
    p.add_argument("--state", help="only items in this state")
    p.add_argument("--automation", help="only items of this automation")
    p.add_argument("--limit", type=int, default=1000)

    for name, fn, help in (
        ("show", cmd_show, "one item in full"),
        ("history", cmd_history, "an item's events, oldest first"),
    ):
        p = add(name, fn, help)
        p.add_argument("item", metavar="ITEM", help="item id or AUTOMATION/KEY")

    add_item_commands(add, keyed)
    add_keys_commands(add, common)
    add_checkpoint_command(add)

    p = add("actors", cmd_actors, "the actor registry")
    asub = p.add_subparsers(dest="actors_command", required=True, metavar="ACTION")
    a = asub.add_parser("add", help="add an actor (or roles to one)", parents=[common])
    a.add_argument("name")
    a.add_argument("--role", action="append", required=True, help="a role (repeat)")
    asub.add_parser("list", help="list actors", parents=[common])
    a = asub.add_parser("revoke", help="revoke an actor, or one role", parents=[common])
    a.add_argument("name")
    a.add_argument("--role", help="revoke only this role")
    a = asub.add_parser(
        "token", help="print a new API token for an actor (shown once)", parents=[common]
    )
    a.add_argument("name")
    add_key_option(a)

    p = add("verify", cmd_verify, "check the whole store: histories, seals, ledger, registry")
    add_since_option(p)
    add("migrate", cmd_migrate, "create the database, or apply new schema migrations", opens=CREATE)
    add_check_command(add)
    add_workers_command(add)
    p = add(
        "completion",
        cmd_completion,
        "print a shell completion script (bash, zsh or fish)",
        opens=NONE,
    )
    p.add_argument("shell", choices=SHELLS, help="the shell")
    p.epilog = (
        "bash: source <(stopline completion bash); zsh: stopline completion zsh >"
        " ~/.zfunc/_stopline (with ~/.zfunc on fpath); fish: stopline completion fish >"
        " ~/.config/fish/completions/stopline.fish"
    )
    add_mcp_command(add)
    p = add("serve", cmd_serve, "the HTTP API and the web inbox", opens=RAW)
    p.add_argument(
        "--host", default=os.environ.get("STOPLINE_HOST", "127.0.0.1"), help="env STOPLINE_HOST"
    )
    p.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("STOPLINE_PORT", "8420")),
        help="env STOPLINE_PORT",
    )
    add_log_format(p)
    return parser


def add_log_format(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--log-format",
        choices=logs.FORMATS,
        default=None,
        help=f"log lines as text or one JSON object per line (env {ENV_LOG_FORMAT}; default text)",
    )


def open_for(args: argparse.Namespace) -> Store | None:
    """The store a command needs (see the ``opens`` modes), or ``None`` for one that needs
    none. Raises :class:`StoreError` with one line when there is no usable database."""
    opens = args.opens
    if opens in (NONE, SELF):
        return None
    registering = (
        (args.command == "actors" and args.actors_command == "add")
        or (args.command == "keys" and args.keys_command in ("certify", "rotate"))
        or (args.command == "mcp" and bool(args.app))  # registers the app's agent automations
    )
    if registering:
        opens = CREATE  # registering people may come before the first run
    url = database_url(args.db)
    if opens == CREATE:
        return open_store(
            url,
            migrate=args.command != "migrate",
            check=args.command != "migrate",
            connect_timeout=CONNECT_TIMEOUT,
        )
    if opens == RAW:  # `serve` refuses an unmigrated or unknown schema instead of changing it
        return open_store(
            url, migrate=False, check=False, create=False, connect_timeout=CONNECT_TIMEOUT
        )
    return open_store(url, migrate=False, check=True, create=False, connect_timeout=CONNECT_TIMEOUT)


def argv_problem(argv: Sequence[str]) -> str | None:
    """Why an argument cannot be taken as text (a byte that is not UTF-8 arrives as a lone
    surrogate, a NUL character), naming the flag it is the value of; ``None`` if none."""
    for position, arg in enumerate(argv):
        problem = text_problem(arg)
        if problem is None:
            continue
        flag, equals, value = arg.partition("=")
        if equals and flag.startswith("--") and text_problem(flag) is None:
            return f"the value of {flag} is {text_problem(value)}"
        before = argv[position - 1] if position else ""
        if before.startswith("--") and text_problem(before) is None:
            return f"the value of {before} is {problem}"
        return f"argument {position + 1} is {problem}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    problem = argv_problem(argv)
    if problem is not None:  # malformed input: one line, exit 2, nothing opened or written
        print(f"stopline: {problem}", file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        logs.configure(getattr(args, "log_format", None))
    except ValueError as exc:
        print(f"stopline: {ENV_LOG_FORMAT}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    out = Out(getattr(args, "json", False))
    if getattr(args, "offline", False):  # needs no database (stopline keys create-root ...)
        try:
            return run_offline(args, out)
        except UsageError as exc:
            print(f"stopline: {exc}", file=sys.stderr)
            return EXIT_USAGE
    try:
        host_trust()  # a malformed STOPLINE_TRUST_ROOT is exit 2 for every command, never unsigned
    except UsageError as exc:
        print(f"stopline: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        store = open_for(args)
    except StoreError as exc:
        print(f"stopline: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        print(f"stopline: cannot open the database: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    try:
        code: int = args.fn(args, store, out)
        return code
    except (UsageError, TrustError) as exc:  # TrustError: a malformed STOPLINE_TRUST_ROOT
        print(f"stopline: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreError as exc:
        print(f"stopline: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # pragma: no cover - reported, never swallowed
        logging.getLogger("stopline").exception("internal error")
        print(f"stopline: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if store is not None:
            store.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
