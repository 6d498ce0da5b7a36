"""The parser of ``stopline``: every command, its flags and its help. Building it imports no
command: each runs from its module, imported when it is chosen (:func:`.options.lazy`), so
``stopline --help`` and a usage error start quickly."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import Any

from .. import __version__, logs
from ..logs import ENV_FORMAT as ENV_LOG_FORMAT
from ..store import ENV_URL
from ..trust.env import PURPOSES
from . import completion
from .check import add_check_command
from .completion import SHELLS
from .item_commands import add_item_commands
from .mcp import add_mcp_command
from .options import add_checkpoint_command, add_key_option, add_since_option, lazy
from .workers import add_workers_command

AddParser = Callable[..., argparse.ArgumentParser]
# How a command opens the database: ``create`` (and migrate) it, need an ``existing`` migrated
# one, open it ``raw`` (serve checks the schema itself), or not at all (``none``).
CREATE, EXISTING, RAW, NONE = "create", "existing", "raw", "none"
# `run` opens (and creates, and migrates) its database itself, waiting while it is away
SELF = "self"


def cmd_completion(args: argparse.Namespace, store: None, out: Any) -> int:
    print(completion.script(build_parser(), args.shell), end="")
    return 0


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
        lazy("admin_commands", "cmd_demo"),
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

    p = add(
        "run",
        lazy("admin_commands", "cmd_run"),
        "run workers and the scheduler for the automations in APP",
        opens=SELF,
    )
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
        default=os.environ.get("STOPLINE_WORKERS", "1"),
        help="worker processes (env STOPLINE_WORKERS; default 1)",
    )
    p.add_argument(
        "--concurrency",
        type=int,
        default=os.environ.get("STOPLINE_CONCURRENCY", "1"),
        help="items each worker process runs at once: plain hooks on threads, async hooks on"
        " an event loop (env STOPLINE_CONCURRENCY; default 1)",
    )
    p.add_argument(
        "--batch",
        type=int,
        default=os.environ.get("STOPLINE_BATCH", "1"),
        help="items each worker process claims in one statement and commits in one"
        " transaction (env STOPLINE_BATCH; default 1)",
    )
    p.add_argument(
        "--ahead",
        type=int,
        default=os.environ.get("STOPLINE_AHEAD", "0"),
        help="items each worker process claims beyond those it runs, so that a slot that frees"
        " starts its next item at once; each waits for a slot in this process, its lease"
        " renewed (with --lockstep: for one of the places of the hooks running at once)"
        " (env STOPLINE_AHEAD; default 0)",
    )
    p.add_argument(
        "--lockstep",
        action="store_true",
        default=os.environ.get("STOPLINE_LOCKSTEP", "").strip().lower()
        in ("1", "true", "yes", "on"),
        help="run each worker process's items as greenlets of one thread, their decisions"
        " written in groups (needs the lockstep extra; env STOPLINE_LOCKSTEP=1)",
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

    p = add("items", lazy("read_commands", "cmd_items"), "list items")
    p.epilog = (
        "Each row is read with its last event and checked against it, as `show` checks one:"
        " a record that is not what its history sealed shows its first finding as WHY, and"
        " `close` alone as its next command."
    )
    p.add_argument("--state", help="only items in this state")
    p.add_argument("--automation", help="only items of this automation")
    p.add_argument("--limit", type=int, default=1000, help="at most this many (default 1000)")

    for name, fn, help in (
        (
            "show",
            lazy("read_commands", "cmd_show"),
            "one item in full, and whether it is what its history sealed (integrity)",
        ),
        ("history", lazy("read_commands", "cmd_history"), "an item's events, oldest first"),
    ):
        p = add(name, fn, help)
        p.add_argument("item", metavar="ITEM", help="item id or AUTOMATION/KEY")

    add_item_commands(add, keyed)
    add_keys_commands(add, common)
    add_checkpoint_command(add)

    p = add("actors", lazy("admin_commands", "cmd_actors"), "the actor registry")
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

    p = add(
        "verify",
        lazy("read_commands", "cmd_verify"),
        "check the whole store: histories, seals, ledger, registry",
    )
    add_since_option(p)
    add(
        "migrate",
        lazy("admin_commands", "cmd_migrate"),
        "create the database, or apply new schema migrations",
        opens=CREATE,
    )
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
    p = add(
        "serve", lazy("admin_commands", "cmd_serve"), "the HTTP API and the web inbox", opens=RAW
    )
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


def add_keys_commands(add: AddParser, common: argparse.ArgumentParser) -> None:
    p = add("keys", lazy("keys", "cmd_keys"), "keys, the trust root and certificates (signed mode)")
    sub = p.add_subparsers(dest="keys_command", required=True, metavar="ACTION")

    def action(name: str, help: str, offline: bool = False) -> argparse.ArgumentParser:
        a = sub.add_parser(name, help=help, description=help, parents=[common])
        a.set_defaults(offline=offline)
        return a

    a = action("create-root", "write a new trust root key pair (PATH and PATH.pub)", True)
    a.add_argument("--out", required=True, metavar="PATH")
    a.add_argument("--comment", help="the public key's comment (default stopline-root)")
    a = action(
        "generate", "write a new key pair for a person (ssh-keygen -t ed25519 works too)", True
    )
    a.add_argument("--out", required=True, metavar="PATH")
    a.add_argument("--comment", help="the public key's comment")

    root_help = "the root key: a private key file, or a public key held by ssh-agent"
    a = action("certify", "certify a key as an actor's, with roles, signed by a root key")
    a.add_argument("name", metavar="NAME")
    a.add_argument("--key", required=True, metavar="PUB", help="a .pub file or ssh-ed25519 line")
    a.add_argument("--role", action="append", help="a role (repeat)")
    a.add_argument(
        "--purpose",
        action="append",
        choices=PURPOSES,
        help="sign (default): the actor's own commands; speak_for: a server signing for the "
        "people who sign in to it; checkpoint: checkpoints (repeat)",
    )
    a.add_argument("--days", type=int, help="valid for this many days (default: until revoked)")
    a.add_argument("--root", required=True, metavar="ROOTKEY", help=root_help)

    a = action("revoke", "revoke one key of an actor (--key), or all of them")
    a.add_argument("name", metavar="NAME")
    a.add_argument("--key", metavar="FINGERPRINT", help="SHA256:... (or the public key)")
    a.add_argument("--root", required=True, metavar="ROOTKEY", help=root_help)

    a = action("rotate", "certify a new key with the same roles, and revoke the old ones")
    a.add_argument("name", metavar="NAME")
    a.add_argument("--key", required=True, metavar="NEWPUB", help="the new public key")
    a.add_argument("--days", type=int, help="valid for this many days (default: until revoked)")
    a.add_argument("--root", required=True, metavar="ROOTKEY", help=root_help)

    action("list", "every certificate with its status, and this host's mode")
