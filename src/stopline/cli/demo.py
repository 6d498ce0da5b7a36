"""``stopline demo``: the bundled automations, end to end, on the default embedded store."""

from __future__ import annotations

import argparse
from typing import Any

from ..controller import Controller
from ..core.states import State
from ..examples.demo import app, drafts_folder
from ..runtime.runner import run
from ..runtime.scheduler import Scheduler
from ..store import Store, database_url
from ..trust.authority import TRUST_ROOT_ENV
from ..views import next_commands, summary_view, why
from . import render
from .demo_signed import prepare

APP = "stopline.examples.demo:app"
S = State


def run_demo(args: argparse.Namespace, store: Store, out: Any) -> int:
    url = database_url(args.db)
    keys = prepare(store) if getattr(args, "signed", False) else None

    def person(name: str) -> Controller:
        """The controller ``name``'s commands run on (signed with their key in signed mode)."""
        return keys.controller(store, name) if keys else Controller(store)

    def key(name: str) -> str:
        return f" --key {keys.path(name)}" if keys else ""

    Scheduler(store, app).register()
    lines: list[str] = [f"stopline demo on {url} (drafts in ./{drafts_folder()})", ""]
    if keys:
        lines += [
            f"Signed mode: a scratch trust root and a key for each person in ./{keys.folder}/;",
            "the root certified alice, bob (approver, operator), carol (operator), dana (viewer),",
            "and every command below is signed with the person's key.",
            "",
        ]
    say = lines.append

    run(app, url, once=True, linger=args.linger)
    controller = Controller(store)

    # An approval round-trip: one reply draft approved, delivered, read back, completed.
    reply = controller.item("support-triage/msg-1041")
    if reply is not None and reply.state is S.AWAITING_APPROVAL:
        digest = reply.doc("proposal")["digest"]
        say("1. An approval round-trip, as alice would type it:")
        say(f"   $ stopline approve {reply.id} --proposal {digest} --actor alice{key('alice')}")
        decision = person("alice").approve(reply.id, proposal=digest, actor="alice")
        say(f"   -> {decision.outcome.value}: {decision.state.value if decision.state else '-'}")
        run(app, url, once=True, linger=args.linger)
        after = controller.item(reply.id)
        say(
            f"   after the workers ran: {after.state.value if after else '?'} ({why(after) if after else ''})"
        )
        say("")

    restart = controller.item("service-health/checkout-api")
    if (
        restart is not None
        and restart.state is S.AWAITING_APPROVAL
        and not restart.doc("proposal")["approvals"]
    ):
        digest = restart.doc("proposal")["digest"]
        say("2. A restart needs two distinct approvers; alice approved first:")
        person("alice").approve(restart.id, proposal=digest, actor="alice")
        say(
            f"   $ stopline approve {restart.id} --proposal {digest} --actor alice{key('alice')}"
            "   -> 1 of 2"
        )
        say("   bob's approval would release it (paste, then run the workers):")
        say(f"   $ stopline approve {restart.id} --proposal {digest} --actor bob{key('bob')}")
        say(f"   $ stopline run {APP} --once")
        say("")

    items = sorted(store.list_items(), key=lambda i: (i.automation, i.key))
    rows = [(i.id, f"{i.automation}/{i.key}", i.state.value, why(i)) for i in items]
    say("Where each item stopped, and why:")
    say(render.table(rows, ["ID", "ITEM", "STATE", "WHY"]))
    say("")
    say("What a person would type next:")
    for item in items:
        for hint in next_commands(item):
            say(f"  {hint}")
    exhausted = [i for i in items if i.state is S.EXHAUSTED]
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
            f' --reason "endpoint fixed" --attempts 3{key("carol")}'
        )
    digest_item = controller.item("weekly-digest/2026-W48")
    if digest_item is not None and digest_item.state in (S.COMPLETED, S.REVISION_COMPLETED):
        artifacts = " ".join(f"--artifact {a['key']}" for a in digest_item.doc("artifacts"))
        say("")
        say(
            "The two-article digest was delivered as drafts and read back. To revise both in place:"
        )
        say(
            f"  $ stopline revise {digest_item.id} --actor carol"
            f' --reason "clearer wording" {artifacts}{key("carol")}'
        )
        say(f"  $ stopline run {APP} --once")
    say("")
    say("Actors: alice, bob (approver, operator), carol (operator), dana (viewer).")
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
    out.doc({"db": url, "items": [summary_view(i) for i in items]}, "\n".join(lines))
    return 0
