"""The commands that run or look after a host: ``migrate``, ``actors``, ``run``, ``demo``
and ``serve``."""

from __future__ import annotations

import argparse
import contextlib
import sys

from ..controller import Controller
from ..core.names import InvalidName, check_actor_name
from ..registrar import ActorError
from ..store import Store, StoreError, database_url, open_store
from . import render
from .checkpoint import (
    refuse_if_behind,
)
from .errors import UsageError
from .keys import certified_actors
from .output import EXIT_HOOKS, EXIT_OK, EXIT_REFUSED, Out, on_terminal
from .signing import controller_for, host_trust


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
    if args.concurrency < 1 or args.batch < 1:
        raise UsageError("--concurrency and --batch must be at least 1")
    if args.ahead < 0:
        raise UsageError("--ahead must be at least 0")
    if args.lockstep:
        from ..runtime import lockstep

        if not lockstep.available():
            raise UsageError(
                "--lockstep needs the greenlet package: pip install 'stopline[lockstep]'"
            )
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
                concurrency=args.concurrency,
                batch=args.batch,
                ahead=args.ahead,
                lockstep=args.lockstep,
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
        print(on_terminal(text))
    elif failures:
        print(on_terminal(text), file=sys.stderr)
    return EXIT_HOOKS if failures else EXIT_OK


def cmd_demo(args: argparse.Namespace, store: Store, out: Out) -> int:
    from .demo import run_demo

    return run_demo(args, store, out)


def cmd_serve(args: argparse.Namespace, store: Store, out: Out) -> int:
    try:
        from ..server.run import serve  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise UsageError(
            f"the server needs the server extra: pip install 'stopline[server]' ({exc})"
        ) from exc
    store.close()
    code: int = serve(args, database_url(args.db))
    return code
