"""``stopline check APP``: the stop-line test for your own automations (see
:mod:`stopline.runtime.check`).

Exit status: 0 every stopped item stayed where it was and verify is clean; 3 an item moved,
re-discovery made new items, or verify found a problem (also an item that would act without
approval, with ``--strict``); 4 the app's own code failed (a discovery or a hook raised); 2 the
app cannot be loaded.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from .errors import UsageError

EXIT_OK, EXIT_USAGE, EXIT_MOVED, EXIT_HOOKS = 0, 2, 3, 4

HELP = (
    "check that APP's stopped items stay stopped: a worker runs until its items stop, is"
    " killed, a new worker re-discovers; on a scratch database, never acting"
)
EPILOG = (
    "It never approves, never runs an execute or revise hook and never writes to a target: an"
    " item whose policy needs no approval is reported as 'would act without approval'. The"
    " app's discovery, observe and propose hooks do run (they may read your systems). The"
    " scratch database is removed at the end unless --keep."
)


def _text(report: Any) -> str:
    out: list[str] = []
    first, second = report.first, report.second
    for phase in (first, second):
        if not phase.stopped:
            still = ", ".join(phase.working[:10]) or "none"
            out.append(
                f"note: in the {phase.name} run not every item stopped within"
                f" {phase.seconds:.0f} s (still at work: {still})"
            )
    out.append(f"items recorded after the first run: {len(report.recorded)}")
    for key, rec in sorted(report.recorded.items()):
        digest = f", proposal {rec['proposal_digest'][:12]}…" if rec["proposal_digest"] else ""
        out.append(
            f"  {key}: {rec['state']}, attempts {rec['attempts']} of {rec['max_attempts']},"
            f" {rec['events']} events{digest}"
        )
    if report.moved:
        out.append(f"MOVED: {len(report.moved)} stopped item(s) changed after the restart:")
        for m in report.moved:
            shown = {k: v for k, v in m["changes"].items() if k not in ("head", "version")}
            changes = "; ".join(
                f"{k} {v['before']} -> {v['after']}" for k, v in (shown or m["changes"]).items()
            )
            out.append(f"  {m['item']}: {changes}")
            out += [f"    {line}" for line in m["events"][:10]]
    else:
        out.append("no stopped item moved after the worker was killed and discovery ran again")
    if report.new_items:
        out.append(
            f"NEW ITEMS on re-discovery ({len(report.new_items)}): a key that changes from run"
            " to run makes the same work again: " + ", ".join(report.new_items[:10])
        )
    for u in report.unapproved:
        out.append(
            f"would act without approval: {u['item']} ({u['action']} on {u['target'] or '-'}):"
            " its policy requires no approval; the check held it before its execute hook"
        )
    out.append("stop states reached: " + (", ".join(report.reached) or "none"))
    for state, why in report.not_reached.items():
        out.append(f"  not reached: {state} ({why})")
    verify = report.verify
    status = "ok" if verify.get("ok") else "PROBLEMS"
    out.append(f"verify: {status}: {verify.get('items')} items, {verify.get('events')} events")
    for line in report.failures:
        out.append(f"FAILED (the app's own code): {line}")
    if report.database:
        out.append(f"the scratch database is kept: {report.database}")
    return "\n".join(out)


def cmd_check(args: argparse.Namespace, store: None, out: Any) -> int:
    from ..runtime.check import check
    from ..runtime.loader import AppLoadError, load_app

    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    try:
        load_app(args.app)  # a clear exit 2 before any process starts
    except AppLoadError as exc:
        raise UsageError(str(exc)) from exc
    progress = sys.stderr.isatty() and not out.json

    def say(line: str) -> None:
        if progress:
            print(line, file=sys.stderr)

    report = check(args.app, timeout=args.timeout, keep=args.keep, say=say)
    out.doc(report.to_plain(), _text(report))
    if not report.ok:
        return EXIT_MOVED
    if report.failures:
        return EXIT_HOOKS
    if args.strict and report.unapproved:
        return EXIT_MOVED
    return EXIT_OK


def add_check_command(add: Callable[..., argparse.ArgumentParser]) -> None:
    p = add("check", cmd_check, HELP, opens="none")
    p.epilog = EPILOG
    p.add_argument("app", metavar="APP", help="module:attribute or path/to/file.py:attribute")
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds each worker may take to bring its items to a stop (default 60)",
    )
    p.add_argument("--keep", action="store_true", help="keep the scratch database, print its path")
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 3 also when an item would act without approval",
    )
