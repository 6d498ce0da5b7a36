"""``stopline demo``: the bundled automations, end to end, on the default embedded store.

On a database that holds items already, the demo starts nothing and approves nothing: it
reports where the items are. ``--fresh`` moves an earlier SQLite file aside and starts over.
Every line about an approval says what the decision was, never what it was expected to be.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..controller import Controller
from ..core.decision import Outcome
from ..core.states import State
from ..examples.demo import ACTORS, app, drafts_folder
from ..runtime.runner import run
from ..runtime.scheduler import Scheduler
from ..store import Store, database_url, open_store, redacted, sqlite_path
from ..trust.authority import TRUST_ROOT_ENV
from ..views import next_commands, summary_view, why
from . import render
from .demo_signed import DemoKeys, prepare
from .errors import UsageError

APP = "stopline.examples.demo:app"


def _backup(path: Path) -> Path:
    n = 1
    while Path(f"{path}.bak-{n}").exists():
        n += 1
    return Path(f"{path}.bak-{n}")


def _fresh(url: str) -> str:
    """Move an existing demo SQLite database (and its WAL files) aside; say where."""
    if not url.startswith("sqlite:"):
        raise UsageError("--fresh moves a SQLite file aside; for PostgreSQL use a new database")
    path = Path(sqlite_path(url)[0])
    if not path.exists():
        return ""
    backup = _backup(path)
    path.rename(backup)
    for suffix in ("-wal", "-shm"):
        extra = Path(f"{path}{suffix}")
        if extra.exists():
            extra.rename(Path(f"{backup}{suffix}"))
    return f"moved the earlier database aside to {backup}"


def _actor_problems(store: Store) -> list[str]:
    """Demo actors that exist with other roles than the demo needs them to hold."""
    found = store.actors()
    problems = []
    for name, roles in ACTORS.items():
        actor = found.get(name)
        if actor is None:
            continue
        missing = sorted(set(roles) - set(actor.roles)) if actor.active else sorted(roles)
        if missing:
            held = ", ".join(sorted(actor.roles)) if actor.active else "(revoked)"
            problems.append(
                f"actor {name} exists with roles {held or '(none)'}; the demo needs"
                f" {', '.join(missing)}"
            )
    return problems


def _outcome(decision: Any) -> str:
    if decision.outcome is Outcome.REFUSED:
        return f"refused: {', '.join(decision.reasons)}"
    return f"{decision.outcome.value}: {decision.state.value if decision.state else '-'}"


class People:
    """Each person's controller (signed with their key in signed mode) and the --key flag
    their commands take."""

    def __init__(self, store: Store, keys: DemoKeys | None) -> None:
        self.store, self.keys = store, keys

    def controller(self, name: str) -> Controller:
        return self.keys.controller(self.store, name) if self.keys else Controller(self.store)

    def key(self, name: str) -> str:
        return f" --key {self.keys.path(name)}" if self.keys else ""


def _round_trips(controller: Controller, people: People, url: str, linger: float, say: Any) -> None:
    """An approval round-trip, then the first of two approvals, each as its decision says."""
    reply = controller.item("support-triage/msg-1041")
    alice = people.controller("alice")
    if reply is not None and reply.state is State.AWAITING_APPROVAL:
        digest = reply.doc("proposal")["digest"]
        say("1. An approval round-trip, as alice would type it:")
        say(
            f"   $ stopline approve {reply.id} --proposal {digest} --actor alice{people.key('alice')}"
        )
        decision = alice.approve(reply.id, proposal=digest, actor="alice")
        say(f"   -> {_outcome(decision)}")
        if decision.outcome is Outcome.APPLIED:
            run(app, url, once=True, linger=linger)
            after = controller.item(reply.id)
            if after is not None:
                say(f"   after the workers ran: {after.state.value} ({why(after)})")
        say("")
    restart = controller.item("service-health/checkout-api")
    if restart is None or restart.state is not State.AWAITING_APPROVAL:
        return
    proposal = restart.doc("proposal")
    if proposal["approvals"]:
        return
    digest, needed = proposal["digest"], proposal["required_approvals"]
    decision = alice.approve(restart.id, proposal=digest, actor="alice")
    after = controller.item(restart.id)
    count = len(after.doc("proposal")["approvals"]) if after is not None else 0
    say(f"2. A restart needs {needed} distinct approvers:")
    say(
        f"   $ stopline approve {restart.id} --proposal {digest} --actor alice{people.key('alice')}"
    )
    say(f"   -> {_outcome(decision)} ({count} of {needed})")
    if decision.outcome is Outcome.APPLIED:
        say("   bob's approval would release it (paste, then run the workers):")
        say(
            f"   $ stopline approve {restart.id} --proposal {digest} --actor bob{people.key('bob')}"
        )
        say(f"   $ stopline run {APP} --once")
    say("")


def run_demo(args: argparse.Namespace, store: Store, out: Any) -> int:
    url = database_url(args.db)
    notes: list[str] = []
    if args.fresh:
        store.close()
        moved = _fresh(url)
        notes.append(moved or "no earlier database: starting on a new one")
        store = open_store(url)
    lines: list[str] = [f"stopline demo on {redacted(url)} (drafts in ./{drafts_folder()})"]
    say = lines.append
    say("")
    earlier = bool(store.list_items(limit=1))
    for note in notes:
        say(f"({note})")
    if earlier:
        say(
            "This database holds items already (the demo ran here before, or it is another"
            " database): the demo starts nothing and approves nothing; here is where its items"
            " are now. `stopline demo --fresh` starts over on a new file."
        )
        say("")
    keys = prepare(store) if getattr(args, "signed", False) else None
    people = People(store, keys)
    if keys:
        say(
            f"Signed mode: a scratch trust root and a key for each person in ./{keys.folder}/;"
            " the root certified alice, bob (approver, operator), carol (operator), dana"
            " (viewer), and every command below is signed with the person's key."
        )
        say("")
    problems = [] if keys else _actor_problems(store)
    Scheduler(store, app).register()
    for problem in problems:
        say(f"note: {problem}; the demo leaves the approval steps out")
    if problems:
        say("")
    controller = Controller(store, trust=keys.trust if keys else None)
    if not earlier:
        run(app, url, once=True, linger=args.linger)
        if not problems:
            _round_trips(controller, people, url, args.linger, say)

    items = sorted(store.list_items(), key=lambda i: (i.automation, i.key))
    rows = [(i.id, f"{i.automation}/{i.key}", i.state.value, why(i)) for i in items]
    say("Where each item stopped, and why:")
    say(render.table(rows, ["ID", "ITEM", "STATE", "WHY"]))
    say("")
    say("What a person would type next:")
    for item in items:
        for hint in next_commands(item):
            say(f"  {hint}")
    exhausted = [i for i in items if i.state is State.EXHAUSTED]
    if exhausted:
        account = exhausted[0].doc("account")
        say("")
        say(f"{exhausted[0].automation}/{exhausted[0].key} spent its retry budget; its account:")
        for entry in account["attempts"]:
            say(
                f"  attempt {entry['attempt']} at {entry['at']}: {entry['class']}: {entry['message']}"
            )
        say(f"  to resume: {account['resume']['condition']}")
        say(
            f"  $ stopline resume {exhausted[0].id} --actor carol"
            f' --reason "endpoint fixed" --attempts 3{people.key("carol")}'
        )
    digest_item = controller.item("weekly-digest/2026-W48")
    if digest_item is not None and digest_item.state in (State.COMPLETED, State.REVISION_COMPLETED):
        artifacts = " ".join(f"--artifact {a['key']}" for a in digest_item.doc("artifacts"))
        say("")
        say(
            "The two-article digest was delivered as drafts and read back. To revise both in place:"
        )
        say(
            f"  $ stopline revise {digest_item.id} --actor carol"
            f' --reason "clearer wording" {artifacts}{people.key("carol")}'
        )
        say(f"  $ stopline run {APP} --once")
    say("")
    registered = store.actors()
    say(
        "Actors: "
        + "; ".join(
            f"{a.name} ({', '.join(sorted(a.roles)) or 'no role'})"
            for a in registered.values()
            if a.active
        )
        + "."
    )
    if url != "sqlite:///stopline.db":
        say(f"Commands above need --db {url} (or export STOPLINE_DATABASE_URL={url}).")
    if keys:
        say(
            "The commands above are checked against the trust root only where this host has it:"
            f" export {TRUST_ROOT_ENV}=$PWD/{keys.path('root')}.pub"
        )
        say(
            f"(each person's command takes --key {keys.folder}/NAME, or ssh-add"
            f" {keys.folder}/NAME once and leave --key out; stopline keys list shows them)"
        )
    else:
        say("To see the same approvals signed, run stopline demo --signed in a fresh folder.")
    out.doc(
        {
            "db": url,
            "reused": earlier,
            "notes": notes + problems,
            "items": [summary_view(i) for i in items],
        },
        "\n".join(lines),
    )
    if args.fresh:
        store.close()
    return 0
