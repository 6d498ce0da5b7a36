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
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import logs
from ..core.limits import text_problem
from ..logs import ENV_FORMAT as ENV_LOG_FORMAT
from ..store import StoreError, database_url, open_store
from .errors import UsageError
from .output import EXIT_ERROR, EXIT_USAGE, Out
from .parser import CREATE, NONE, RAW, SELF, build_parser

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["build_parser", "main"]

CONNECT_TIMEOUT = 5.0  # seconds: a database that does not answer by then is an error


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
    # the command chosen, and what it needs, imported only now (``--help`` never gets here)
    from ..trust.authority import TrustError
    from .signing import host_trust

    out = Out(getattr(args, "json", False))
    if getattr(args, "offline", False):  # needs no database (stopline keys create-root ...)
        from .keys import run_offline

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
