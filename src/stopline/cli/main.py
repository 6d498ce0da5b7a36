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
import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .. import __version__
from ..commands.perform import Performed
from ..controller import Controller
from ..core.decision import Outcome
from ..core.limits import text_problem
from ..core.names import InvalidName, check_actor_name
from ..core.reasons import Reason
from ..core.states import State
from ..registrar import ActorError
from ..store import ENV_URL, Store, StoreError, database_url, open_store
from ..trust.authority import TrustError
from ..verification import verify_store
from ..views import event_view, item_view, next_commands, summary_view, why
from . import completion, render
from .check import add_check_command
from .checkpoint import (
    add_checkpoint_command,
    add_since_option,
    held_since,
    refuse_if_behind,
    since_text,
)
from .completion import SHELLS
from .errors import UsageError
from .item_commands import add_item_commands
from .keys import add_keys_commands, certified_actors, run_offline
from .signing import add_key_option, controller_for, host_trust, mode, mode_text

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_REFUSED, EXIT_HOOKS = 0, 1, 2, 3, 4
CONNECT_TIMEOUT = 5.0  # seconds: a database that does not answer by then is an error

# How a command opens the database: ``create`` (and migrate) it, need an ``existing`` migrated
# one, open it ``raw`` (serve checks the schema itself), or not at all (``none``).
CREATE, EXISTING, RAW, NONE = "create", "existing", "raw", "none"
# `run` opens (and creates, and migrates) its database itself, waiting while it is away
SELF = "self"


class Out:
    def __init__(self, as_json: bool) -> None:
        self.json = as_json

    def doc(self, doc: Any, text: str) -> None:
        try:
            print(json.dumps(doc, sort_keys=True, ensure_ascii=False) if self.json else text)
            sys.stdout.flush()
        except BrokenPipeError:  # `stopline ... | head`: the reader left; the status stands
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())

    def decision(self, done: Performed, controller: Controller | None = None) -> int:
        decision = done.decision
        assert decision is not None
        text = render.decision_text(done)
        if controller is not None and decision.item_id and not self.json:
            item = controller.item(decision.item_id)
            if Reason.PROPOSAL_DIGEST_MISMATCH in decision.reasons and item is not None:
                # never an invitation to approve a digest nobody has read
                text += f"\nnext: read the current proposal first: stopline show {item.id}"
            elif item is not None:
                hints = next_commands(item)
                if hints:
                    text += "\nnext:\n  " + "\n  ".join(hints)
        self.doc(done.to_plain(), text)
        return EXIT_REFUSED if decision.outcome is Outcome.REFUSED else EXIT_OK


# --- commands -----------------------------------------------------------------------------


def cmd_items(args: argparse.Namespace, store: Store, out: Out) -> int:
    if args.state and args.state not in {s.value for s in State}:
        raise UsageError(
            f"unknown state {args.state!r}; one of {', '.join(s.value for s in State)}"
        )
    items = store.list_items(state=args.state, automation=args.automation, limit=args.limit)
    actors = store.actors()
    rows = [
        (
            i.id,
            f"{i.automation}/{i.key}",
            i.state.value,
            f"{i.attempts}/{i.max_attempts}",
            why(i, actors),
        )
        for i in items
    ]
    text = render.table(rows, ["ID", "ITEM", "STATE", "ATTEMPTS", "WHY"]) if rows else "no items"
    out.doc({"items": [summary_view(i, actors) for i in items]}, text)
    return EXIT_OK


def _item_or_refuse(controller: Controller, ref: str, out: Out) -> Any:
    item = controller.item(ref)
    if item is None:
        why = (
            f"unknown_item: there is no item {ref} (name one by its id or as AUTOMATION/KEY,"
            " as `stopline items` lists them)"
        )
        doc: dict[str, Any] = {
            "decision": "refused",
            "reasons": ["unknown_item"],
            "item": ref,
            "state": None,
            "sequence": None,
            "explanation": [why],
            "details": {},
        }
        out.doc(doc, f"refused: no item {ref}\nreasons: unknown_item\n  - {why}")
    return item


def cmd_show(args: argparse.Namespace, store: Store, out: Out) -> int:
    controller = Controller(store)
    item = _item_or_refuse(controller, args.item, out)
    if item is None:
        return EXIT_REFUSED
    actors = store.actors()
    view = item_view(item, actors)
    text = render.show_text(view, controller.clock(), why(item, actors))
    hints = next_commands(item)
    if hints:
        text += "\nnext:\n  " + "\n  ".join(hints)
    trust = host_trust()  # signed mode is the host's, never the database's
    text += "\n" + mode_text(trust)
    out.doc({**view, "mode": mode(trust)}, text)
    return EXIT_OK


def cmd_history(args: argparse.Namespace, store: Store, out: Out) -> int:
    controller = Controller(store)
    item = _item_or_refuse(controller, args.item, out)
    if item is None:
        return EXIT_REFUSED
    events = store.history(item.id)
    rows = [
        (
            str(e.seq),
            e.at.strftime("%Y-%m-%d %H:%M:%S"),
            e.command,
            f"{e.from_state.value if e.from_state else '(new)'} -> {e.to_state.value}",
            e.actor,
            ", ".join(e.reasons),
        )
        for e in events
    ]
    text = render.table(rows, ["SEQ", "AT", "COMMAND", "TRANSITION", "BY", "REASONS"])
    out.doc({"item": item.id, "events": [event_view(e) for e in events]}, text)
    return EXIT_OK


def cmd_verify(args: argparse.Namespace, store: Store, out: Out) -> int:
    trust = host_trust()
    report = verify_store(store, trust)
    since = held_since(args.since, store) if args.since else None
    if since is not None:
        report.findings += since.findings
    text = (
        f"{'ok' if report.ok else 'PROBLEMS'}: {report.items} items, {report.events} events checked"
        f" ({mode(trust)} mode)"
    )
    if since is not None:
        text += "\n" + since_text(since)
    if report.findings:
        text += f"\n{len(report.findings)} findings:"
        text += "\n" + "\n".join(f"  {f.text()}" for f in report.findings)
    if report.incidents:
        text += f"\n{len(report.incidents)} recorded incidents (stopped when found):"
        text += "\n" + "\n".join(
            f"  item {i['item']} event {i['seq']} ({i['command']})" for i in report.incidents
        )
    out.doc(report.to_plain(), text)
    return EXIT_OK if report.ok else EXIT_REFUSED


def cmd_migrate(args: argparse.Namespace, store: Store, out: Out) -> int:
    applied = store.migrate()
    version = store.schema_version()
    out.doc(
        {"applied": applied, "version": version},
        f"schema at version {version}"
        + (f" (applied {applied})" if applied else " (nothing to apply)"),
    )
    return EXIT_OK


def cmd_actors(args: argparse.Namespace, store: Store, out: Out) -> int:
    try:
        return _actors(args, store, out)
    except (ActorError, InvalidName) as exc:  # a malformed name or role: exit 2, no write
        raise UsageError(str(exc)) from exc


def _actors(args: argparse.Namespace, store: Store, out: Out) -> int:
    trust = host_trust()
    if trust is not None and args.actors_command in ("add", "revoke"):
        raise UsageError(
            f"signed mode: actors and roles come from certificates the trust root signed; use "
            f"stopline keys {'certify' if args.actors_command == 'add' else 'revoke'} NAME ... "
            "--root ROOTKEY"
        )
    if trust is not None and args.actors_command == "list":
        return certified_actors(store, out, trust)
    controller = Controller(store, trust=trust)
    if args.actors_command == "add":
        actor = controller.add_actor(args.name, args.role)
        out.doc(
            {"actor": actor.name, "roles": sorted(actor.roles), "active": actor.active},
            f"actor {actor.name}: roles {', '.join(sorted(actor.roles))}",
        )
        return EXIT_OK
    if args.actors_command == "list":
        actors = store.actors()
        rows = [
            (a.name, ", ".join(sorted(a.roles)), "active" if a.active else "revoked")
            for a in actors.values()
        ]
        out.doc(
            {
                "actors": [
                    {"name": a.name, "roles": sorted(a.roles), "active": a.active}
                    for a in actors.values()
                ]
            },
            render.table(rows, ["NAME", "ROLES", "STATUS"]) if rows else "no actors",
        )
        return EXIT_OK
    if args.actors_command == "revoke":
        revoked = controller.revoke_actor(args.name, args.role)
        if revoked is None:
            out.doc(
                {"decision": "refused", "reasons": ["actor_unknown"], "actor": args.name},
                f"refused: no actor {args.name}",
            )
            return EXIT_REFUSED
        out.doc(
            {"actor": revoked.name, "roles": sorted(revoked.roles), "active": revoked.active},
            f"actor {revoked.name}: "
            + (
                "revoked"
                if not revoked.active
                else f"roles {', '.join(sorted(revoked.roles)) or '(none)'}"
            ),
        )
        return EXIT_OK
    name = check_actor_name(args.name)
    token = controller_for(store, args, name).new_token(name)
    if token is None:
        out.doc(
            {"decision": "refused", "reasons": ["actor_unknown"], "actor": name},
            f"refused: no active actor {name}",
        )
        return EXIT_REFUSED
    out.doc({"actor": name, "token": token}, f"{token}\n(shown once; only its hash is stored)")
    return EXIT_OK


def cmd_run(args: argparse.Namespace, store: Store | None, out: Out) -> int:
    from ..runtime.loader import AppLoadError
    from ..runtime.notifier import NotifySettings, NotifySettingsError
    from ..runtime.runner import run
    from .progress import live, states_line

    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    behind = refuse_if_behind(args, store)
    if behind:  # a rollback or rewrite before the checkpoint: no worker acts on it
        out.doc(
            {
                "decision": "refused",
                "reasons": [f.reason for f in behind],
                "findings": [f.to_plain() for f in behind],
            },
            "refused: the database no longer holds what the checkpoint saw:\n"
            + "\n".join(f"  {f.text()}" for f in behind),
        )
        return EXIT_REFUSED
    try:
        notify = NotifySettings.from_env()  # STOPLINE_WEBHOOKS and its companions
    except NotifySettingsError as exc:
        raise UsageError(str(exc)) from exc
    url = database_url(args.db)
    showing = sys.stderr.isatty() and not (args.quiet or out.json)
    try:
        with live(url) if showing else contextlib.nullcontext():
            summary = run(
                args.app,
                url,
                once=args.once,
                workers=args.workers,
                linger=args.linger,
                notify=notify,
            )
    except (AppLoadError, InvalidName, StoreError) as exc:  # no app, a bad name, an unusable schema
        raise UsageError(str(exc)) from exc
    after = open_store(url, migrate=False, check=False)
    try:
        where = states_line(after)
        counts = {c.state: c.count for c in after.insights.count_by_state()}
    finally:
        after.close()
    failures = summary.failures
    doc = {
        "steps": summary.steps,
        "transitions": summary.transitions,
        "discovered": summary.discovered,
        "workers": summary.workers,
        "states": counts,
        "failures": failures,
    }
    text = (
        f"{summary.transitions} transitions in {summary.steps} claimed steps,"
        f" {summary.discovered} new items discovered\nitems now: {where}"
    )
    if failures:
        text += f"\nFAILED: the automations' own code failed {len(failures)} time(s):"
        text += "".join(f"\n  {line}" for line in failures[:20])
        if len(failures) > 20:
            text += f"\n  ... and {len(failures) - 20} more"
    if out.json:
        out.doc(doc, text)
    elif not args.quiet:
        print(text)
    elif failures:
        print(text, file=sys.stderr)
    return EXIT_HOOKS if failures else EXIT_OK


def cmd_demo(args: argparse.Namespace, store: Store, out: Out) -> int:
    from .demo import run_demo

    return run_demo(args, store, out)


def cmd_completion(args: argparse.Namespace, store: None, out: Out) -> int:
    print(completion.script(build_parser(), args.shell), end="")
    return EXIT_OK


def cmd_serve(args: argparse.Namespace, store: Store, out: Out) -> int:
    try:
        from ..http.server import serve  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise UsageError(
            f"the server needs the server extra: pip install 'stopline[server]' ({exc})"
        ) from exc
    store.close()
    code: int = serve(args, database_url(args.db))
    return code


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
        "--linger",
        type=float,
        default=5.0,
        help="with --once: wait this long for work that becomes due soon (seconds)",
    )
    p.add_argument(
        "--quiet", action="store_true", help="print nothing unless the automations' code failed"
    )
    add_since_option(p, env=True)

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
    return parser


def open_for(args: argparse.Namespace) -> Store | None:
    """The store a command needs (see the ``opens`` modes), or ``None`` for one that needs
    none. Raises :class:`StoreError` with one line when there is no usable database."""
    opens = args.opens
    if opens in (NONE, SELF):
        return None
    registering = (args.command == "actors" and args.actors_command == "add") or (
        args.command == "keys" and args.keys_command in ("certify", "rotate")
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
    logging.basicConfig(level=os.environ.get("STOPLINE_LOG", "WARNING").upper(), stream=sys.stderr)
    argv = list(sys.argv[1:] if argv is None else argv)
    problem = argv_problem(argv)
    if problem is not None:  # malformed input: one line, exit 2, nothing opened or written
        print(f"stopline: {problem}", file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser()
    args = parser.parse_args(argv)
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
