"""The commands that read the database: ``items``, ``show``, ``history`` and ``verify``."""

from __future__ import annotations

import argparse
from typing import Any

from ..controller import Controller
from ..core.authorship import author_text, event_author
from ..core.states import State
from ..listing import checked
from ..store import Store
from ..verification import verify_store
from ..views import (
    event_view,
    integrity_view,
    item_view,
    next_commands,
    summary_view,
    why,
)
from . import render
from .errors import UsageError
from .output import EXIT_OK, EXIT_REFUSED, Out
from .signing import host_trust, mode, mode_text


def cmd_items(args: argparse.Namespace, store: Store, out: Out) -> int:
    if args.state and args.state not in {s.value for s in State}:
        raise UsageError(
            f"unknown state {args.state!r}; one of {', '.join(s.value for s in State)}"
        )
    listed = store.list_items(state=args.state, automation=args.automation, limit=args.limit)
    items = checked(store, listed)  # each as read with its head, and what it fails against it
    actors = Controller(store).deciding_actors()
    views = [summary_view(i, actors, findings) for i, findings in items]
    rows = [
        (i.id, f"{i.automation}/{i.key}", i.state.value, f"{i.attempts}/{i.max_attempts}", v["why"])
        for (i, _), v in zip(items, views, strict=True)
    ]
    text = render.table(rows, ["ID", "ITEM", "STATE", "ATTEMPTS", "WHY"]) if rows else "no items"
    out.doc({"items": views}, text)
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
    actors = controller.deciding_actors()
    findings = controller.record_findings(item)
    view = {**item_view(item, actors), "integrity": integrity_view(findings)}
    text = render.show_text(view, controller.clock(), why(item, actors))
    if findings:
        lines = "\n".join(f"  - {f.text()}" for f in findings)
        text = (
            "WARNING: this record is not what its history sealed; it is shown as stored, and"
            f" every command on it but close is refused integrity_failed:\n{lines}\n{text}"
        )
    notes = render.note_views(store.history(item.id))
    if notes:
        text += "\n" + "\n".join(render.notes_text(notes, controller.clock()))
    hints = next_commands(item, findings)
    if hints:
        text += "\nnext:\n  " + "\n  ".join(hints)
    trust = host_trust()  # signed mode is the host's, never the database's
    text += "\n" + mode_text(trust)
    out.doc({**view, "notes": notes, "mode": mode(trust)}, text)
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
            author_text(event_author(e.detail)),
            ", ".join(e.reasons),
        )
        for e in events
    ]
    text = render.table(rows, ["SEQ", "AT", "COMMAND", "TRANSITION", "BY", "AUTHOR", "REASONS"])
    notes = [f"  {e.seq}: {e.actor}: {e.detail['body']}" for e in events if e.command == "note"]
    if notes:
        text += "\nnotes:\n" + "\n".join(notes)
    out.doc({"item": item.id, "events": [event_view(e) for e in events]}, text)
    return EXIT_OK


def cmd_verify(args: argparse.Namespace, store: Store, out: Out) -> int:
    from .checkpoint import held_since, since_text  # verify --since: signed checkpoints

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
