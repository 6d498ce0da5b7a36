"""``stopline``: the command line. A thin shell over :class:`stopline.controller.Controller`.

Exit status: 0 applied or zero_write (and a clean verify), 3 refused (and a verify that found
problems), 2 bad usage or malformed input, 1 an internal error.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..controller import ActorError, Controller
from ..core.decision import Decision, Outcome
from ..core.states import State
from ..core.verify import verify_item
from ..store import ENV_URL, Store, StoreError, database_url, open_store
from ..views import event_view, item_view, next_commands, summary_view, why
from . import render

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 3


class UsageError(Exception):
    """Malformed input: exit 2, nothing written."""


class Out:
    def __init__(self, as_json: bool) -> None:
        self.json = as_json

    def doc(self, doc: Any, text: str) -> None:
        print(json.dumps(doc, sort_keys=True, ensure_ascii=False) if self.json else text)

    def decision(self, decision: Decision, controller: Controller | None = None) -> int:
        text = render.decision_text(decision)
        if controller is not None and decision.item_id and not self.json:
            item = controller.item(decision.item_id)
            if item is not None:
                hints = next_commands(item)
                if hints:
                    text += "\nnext:\n  " + "\n  ".join(hints)
        self.doc(decision.to_plain(), text)
        return EXIT_REFUSED if decision.outcome is Outcome.REFUSED else EXIT_OK


def _json_arg(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{what} is not valid JSON: {exc}") from exc


def _nonempty(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


# --- commands -----------------------------------------------------------------------------


def cmd_items(args: argparse.Namespace, store: Store, out: Out) -> int:
    if args.state and args.state not in {s.value for s in State}:
        raise UsageError(
            f"unknown state {args.state!r}; one of {', '.join(s.value for s in State)}"
        )
    items = store.list_items(state=args.state, automation=args.automation, limit=args.limit)
    rows = [
        (i.id, f"{i.automation}/{i.key}", i.state.value, f"{i.attempts}/{i.max_attempts}", why(i))
        for i in items
    ]
    text = render.table(rows, ["ID", "ITEM", "STATE", "ATTEMPTS", "WHY"]) if rows else "no items"
    out.doc({"items": [summary_view(i) for i in items]}, text)
    return EXIT_OK


def _item_or_refuse(controller: Controller, ref: str, out: Out) -> Any:
    item = controller.item(ref)
    if item is None:
        doc = {
            "decision": "refused",
            "reasons": ["unknown_item"],
            "item": ref,
            "state": None,
            "sequence": None,
        }
        out.doc(doc, f"refused: no item {ref}")
    return item


def cmd_show(args: argparse.Namespace, store: Store, out: Out) -> int:
    controller = Controller(store)
    item = _item_or_refuse(controller, args.item, out)
    if item is None:
        return EXIT_REFUSED
    view = item_view(item)
    text = render.show_text(view)
    hints = next_commands(item)
    if hints:
        text += "\nnext:\n  " + "\n  ".join(hints)
    out.doc(view, text)
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


def _decide(
    fn: Callable[[Controller, argparse.Namespace], Decision],
) -> Callable[[argparse.Namespace, Store, Out], int]:
    def run(args: argparse.Namespace, store: Store, out: Out) -> int:
        controller = Controller(store)
        return out.decision(fn(controller, args), controller)

    return run


def _key(args: argparse.Namespace) -> str | None:
    key: str | None = args.idempotency_key
    if key is not None and not key.strip():
        raise UsageError("--idempotency-key must not be empty")
    return key


cmd_approve = _decide(
    lambda c, a: c.approve(a.item, proposal=a.proposal, actor=a.actor, idempotency_key=_key(a))
)
cmd_reject = _decide(
    lambda c, a: c.reject(
        a.item,
        actor=a.actor,
        reason=a.reason,
        send_back=a.send_back,
        proposal=a.proposal,
        idempotency_key=_key(a),
    )
)
cmd_reinspect = _decide(
    lambda c, a: c.reinspect(a.item, actor=a.actor, reason=a.reason, idempotency_key=_key(a))
)
cmd_acknowledge = _decide(
    lambda c, a: c.acknowledge(a.item, actor=a.actor, reason=a.reason, idempotency_key=_key(a))
)
cmd_resume = _decide(
    lambda c, a: c.resume(
        a.item, actor=a.actor, reason=a.reason, attempts=a.attempts, idempotency_key=_key(a)
    )
)
cmd_close = _decide(
    lambda c, a: c.close(a.item, actor=a.actor, reason=a.reason, idempotency_key=_key(a))
)
cmd_finalize = _decide(lambda c, a: c.finalize(a.item, idempotency_key=_key(a)))
cmd_revise = _decide(
    lambda c, a: c.revise(
        a.item, actor=a.actor, reason=a.reason, artifacts=a.artifact, idempotency_key=_key(a)
    )
)
cmd_review = _decide(
    lambda c, a: c.review(
        a.item,
        packet=a.packet,
        verdict=a.verdict,
        actor=a.actor,
        reason=a.reason,
        idempotency_key=_key(a),
    )
)


def cmd_resolve(args: argparse.Namespace, store: Store, out: Out) -> int:
    data = _json_arg(args.input, "--input") if args.input else {}
    if not isinstance(data, dict):
        raise UsageError("--input must be a JSON object")
    controller = Controller(store)
    decision = controller.resolve(
        args.item, actor=args.actor, reason=args.reason, input=data, idempotency_key=_key(args)
    )
    return out.decision(decision, controller)


def cmd_edit(args: argparse.Namespace, store: Store, out: Out) -> int:
    params = _json_arg(args.params, "--params")
    if not isinstance(params, dict):
        raise UsageError("--params must be a JSON object")
    controller = Controller(store)
    return out.decision(
        controller.edit(args.item, actor=args.actor, params=params, idempotency_key=_key(args)),
        controller,
    )


def cmd_publish(args: argparse.Namespace, store: Store, out: Out) -> int:
    from ..runtime.operations import publish

    controller = Controller(store)
    return out.decision(
        publish(
            controller,
            args.item,
            packet=args.packet,
            actor=args.actor,
            app_spec=args.app,
            idempotency_key=_key(args),
        ),
        controller,
    )


def cmd_reconcile(args: argparse.Namespace, store: Store, out: Out) -> int:
    from ..runtime.operations import reconcile

    controller = Controller(store)
    decision = reconcile(
        controller,
        args.item,
        key=args.artifact,
        actor=args.actor,
        app_spec=args.app,
        idempotency_key=_key(args),
    )
    return out.decision(decision, controller)


def cmd_verify(args: argparse.Namespace, store: Store, out: Out) -> int:
    problems: list[str] = []
    items = events = 0
    for item, history in store.iter_items_with_events():
        items += 1
        events += len(history)
        problems += verify_item(item, history)
    from ..core.canonical import digest

    prev = ""
    for n, e in enumerate(store.actor_events(), start=1):
        body = {"at": e["at"], "actor": e["actor"], "change": e["change"], "detail": e["detail"]}
        if e["prev_hash"] != prev or digest({**body, "prev_hash": prev}) != e["hash"]:
            problems.append(f"actor event {n} ({e['actor']}): chain broken or altered")
        prev = e["hash"]
    ok = not problems
    text = f"{'ok' if ok else 'PROBLEMS'}: {items} items, {events} events checked"
    if problems:
        text += "\n" + "\n".join(f"  {p}" for p in problems)
    out.doc({"ok": ok, "items": items, "events": events, "problems": problems}, text)
    return EXIT_OK if ok else EXIT_REFUSED


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
    controller = Controller(store)
    if args.actors_command == "add":
        try:
            actor = controller.add_actor(args.name, args.role)
        except ActorError as exc:
            raise UsageError(str(exc)) from exc
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
    token = controller.new_token(args.name)
    if token is None:
        out.doc(
            {"decision": "refused", "reasons": ["actor_unknown"], "actor": args.name},
            f"refused: no active actor {args.name}",
        )
        return EXIT_REFUSED
    out.doc({"actor": args.name, "token": token}, f"{token}\n(shown once; only its hash is stored)")
    return EXIT_OK


def cmd_run(args: argparse.Namespace, store: Store, out: Out) -> int:
    from ..runtime.loader import AppLoadError
    from ..runtime.runner import run

    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    store.close()
    try:
        summary = run(
            args.app,
            database_url(args.db),
            once=args.once,
            workers=args.workers,
            linger=args.linger,
        )
    except (AppLoadError, StoreError) as exc:  # no app, or a schema this stopline cannot use
        raise UsageError(str(exc)) from exc
    out.doc(
        {
            "steps": summary.steps,
            "transitions": summary.transitions,
            "discovered": summary.discovered,
            "workers": summary.workers,
        },
        f"{summary.transitions} transitions in {summary.steps} claimed steps,"
        f" {summary.discovered} new items discovered",
    )
    return EXIT_OK


def cmd_demo(args: argparse.Namespace, store: Store, out: Out) -> int:
    from .demo import run_demo

    return run_demo(args, store, out)


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
    keyed = argparse.ArgumentParser(add_help=False)
    keyed.add_argument(
        "--idempotency-key",
        metavar="K",
        help="the same key with the same command is a zero-write replay",
    )

    parser = argparse.ArgumentParser(
        prog="stopline", description="A fail-closed controller for recurring automations."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(
        name: str,
        fn: Callable[..., int],
        help: str,
        parents: Sequence[argparse.ArgumentParser] = (),
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help, parents=[common, *parents])
        p.set_defaults(fn=fn)
        return p

    p = add(
        "demo",
        cmd_demo,
        "run the bundled example automations end to end and show where each item stopped",
    )
    p.add_argument("--linger", type=float, default=3.0, help=argparse.SUPPRESS)

    p = add("run", cmd_run, "run workers and the scheduler for the automations in APP")
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

    def item_cmd(
        name: str, fn: Callable[..., int], help: str, *, actor: bool = True, reason: bool = False
    ) -> argparse.ArgumentParser:
        p = add(name, fn, help, [keyed])
        p.add_argument("item", metavar="ITEM", help="item id or AUTOMATION/KEY")
        if actor:
            p.add_argument(
                "--actor",
                required=True,
                type=_nonempty,
                help="who acts (checked against the actor registry)",
            )
        if reason:
            p.add_argument(
                "--reason", required=True, type=_nonempty, help="why (recorded in the history)"
            )
        return p

    p = item_cmd("approve", cmd_approve, "approve exactly one proposal digest")
    p.add_argument(
        "--proposal", required=True, metavar="DIGEST", help="the digest shown by `stopline show`"
    )
    p = item_cmd(
        "reject", cmd_reject, "close without action, or --return to propose again", reason=True
    )
    p.add_argument(
        "--return", dest="send_back", action="store_true", help="send back to be proposed again"
    )
    p.add_argument("--proposal", metavar="DIGEST", help="bind the rejection to this digest")
    item_cmd("reinspect", cmd_reinspect, "back to observing for fresh evidence", reason=True)
    p = item_cmd("acknowledge", cmd_acknowledge, "ready_for_review -> closed")
    p.add_argument("--reason", default="", help="optional note")
    p = item_cmd(
        "resolve", cmd_resolve, "exception -> observing, with corrective input", reason=True
    )
    p.add_argument("--input", metavar="JSON", help="corrective input handed to the observe hook")
    p = item_cmd(
        "resume", cmd_resume, "exhausted -> its work state with a new, recorded budget", reason=True
    )
    p.add_argument("--attempts", type=int, help="attempts granted (capped by the policy)")
    item_cmd("close", cmd_close, "any stop state -> closed", reason=True)
    item_cmd(
        "finalize",
        cmd_finalize,
        "idempotent completion check: zero_write on a completed item",
        actor=False,
    )
    p = item_cmd(
        "revise",
        cmd_revise,
        "open (or resume, with the same request) a revision of a completed delivery",
        reason=True,
    )
    p.add_argument(
        "--artifact",
        required=True,
        action="append",
        metavar="KEY",
        help="an artifact in scope (repeat)",
    )
    p = item_cmd(
        "edit", cmd_edit, "edit the proposal: a new digest, every approval of the old one void"
    )
    p.add_argument("--params", required=True, metavar="JSON", help="the new parameters")
    p = item_cmd("review", cmd_review, "a verdict on a delivered review packet")
    p.add_argument("--packet", required=True, metavar="DIGEST")
    p.add_argument("--verdict", required=True, choices=["approve", "reject"])
    p.add_argument("--reason", default="")
    p = item_cmd(
        "publish", cmd_publish, "publish an approved review packet (delivery mode publish)"
    )
    p.add_argument("--packet", required=True, metavar="DIGEST")
    p.add_argument(
        "--app",
        metavar="APP",
        help="the automations (for the target); env STOPLINE_APP",
        default=os.environ.get("STOPLINE_APP"),
    )
    p = item_cmd(
        "reconcile",
        cmd_reconcile,
        "find a remote object by its key, verify it by readback and bind it; never creates",
    )
    p.add_argument("--artifact", required=True, metavar="KEY")
    p.add_argument(
        "--app",
        metavar="APP",
        help="the automations (for the target); env STOPLINE_APP",
        default=os.environ.get("STOPLINE_APP"),
    )

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

    add("verify", cmd_verify, "replay the event log: hash chains and legal transitions")
    add("migrate", cmd_migrate, "apply schema migrations")
    p = add("serve", cmd_serve, "the HTTP API and the web inbox")
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


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=os.environ.get("STOPLINE_LOG", "WARNING").upper(), stream=sys.stderr)
    parser = build_parser()
    args = parser.parse_args(argv)
    out = Out(getattr(args, "json", False))
    try:
        migrating = args.command == "migrate"
        # `serve` refuses an unmigrated or unknown schema instead of changing it; `run`
        # migrates and checks it itself, waiting while the database is away.
        store = open_store(
            database_url(args.db),
            migrate=args.command not in ("migrate", "serve", "run"),
            check=not migrating and args.command not in ("serve", "run"),
        )
    except StoreError as exc:
        print(f"stopline: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        print(f"stopline: cannot open the database: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    try:
        code: int = args.fn(args, store, out)
        return code
    except UsageError as exc:
        print(f"stopline: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # pragma: no cover - reported, never swallowed
        logging.getLogger("stopline").exception("internal error")
        print(f"stopline: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        store.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
