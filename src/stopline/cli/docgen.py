"""Write ``docs/cli.md`` and ``docs/http.md`` from the argument parser and the command table.

``python -m stopline.cli.docgen`` (re)writes both; ``--check`` writes nothing and exits 1 when
either file differs from what is generated. Every command, flag, field and limit comes from
the parser and :mod:`stopline.commands.table` (the HTTP part in :mod:`.http_doc`); every
reason code from :data:`stopline.core.reason_meanings.MEANINGS`; the exit statuses and
environment variables from the tables below (a test holds :data:`ENVIRONMENT` to every
``STOPLINE_*`` name in the source).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ..commands.fields import Field, Type
from ..core.proposal_diff import MIN_PREFIX
from ..core.reason_meanings import MEANINGS
from ..core.reasons import Reason
from .completion import commands
from .http_doc import cell, http_markdown

ROOT = Path(__file__).resolve().parents[3]
CLI_DOC = ROOT / "docs" / "cli.md"
HTTP_DOC = ROOT / "docs" / "http.md"

EXIT_STATUSES = (
    ("0", "applied or zero_write; a clean `verify`; `check` saw nothing move; `run` ended well"),
    ("1", "an internal error (a bug: the message and a traceback go to standard error)"),
    (
        "2",
        "bad usage or malformed input (nothing is written); no stopline database at the URL;"
        " the database cannot be reached; an APP that cannot be loaded",
    ),
    (
        "3",
        "refused (every reason code printed); `verify` found problems; `check` saw a stopped"
        " item move, new items on re-discovery, or a verify problem",
    ),
    (
        "4",
        "`run` and `check`: the automations' own code failed (a discovery or a hook raised an"
        " undeclared exception, or returned what it may not); the items it touched stopped in"
        " `exception`",
    ),
)

# name, who reads it, what it means
ENVIRONMENT = (
    ("STOPLINE_DATABASE_URL", "every command", "the database when `--db` is not given"),
    (
        "STOPLINE_TRUST_ROOT",
        "every command, `run`, `serve`",
        "signed mode: the trust root (a file of `ssh-ed25519` lines, or one line itself);"
        " unset means unsigned mode (see docs/security.md)",
    ),
    (
        "STOPLINE_SERVER_KEY",
        "`serve` in signed mode",
        "the server's private key, certified by the trust root to speak for the people who sign"
        " in (`stopline keys certify NAME --purpose speak_for`)",
    ),
    (
        "STOPLINE_CHECKPOINT",
        "`run`",
        "a checkpoint file: `run` refuses to start on a database that no longer holds what it saw"
        " (the default of `--since`)",
    ),
    (
        "STOPLINE_KEY",
        "people's commands in signed mode",
        "the private key (OpenSSH or PEM file) that signs the command when `--key` is not given",
    ),
    ("STOPLINE_LOG", "every command, `serve`", "the log level: DEBUG, INFO, WARNING (default)"),
    ("STOPLINE_WORKERS", "`run`", "the default of `--workers`"),
    ("STOPLINE_CONCURRENCY", "`run`", "the default of `--concurrency`"),
    ("STOPLINE_BATCH", "`run`", "the default of `--batch`"),
    ("STOPLINE_AHEAD", "`run`", "the default of `--ahead`"),
    ("STOPLINE_LOCKSTEP", "`run`", "`1`: the default of `--lockstep` is on"),
    (
        "STOPLINE_APP",
        "`reconcile`, `publish`, `serve`",
        "the automations (APP) whose target `reconcile` and `publish` talk to",
    ),
    (
        "STOPLINE_AGENT",
        "`mcp`",
        "on stdio, the agent the server speaks for (the default of `--agent`)",
    ),
    ("STOPLINE_MCP_HOST", "`mcp --http`", "the default of `--host` (127.0.0.1)"),
    ("STOPLINE_MCP_PORT", "`mcp --http`", "the default of `--port` (8421)"),
    ("STOPLINE_HOST", "`serve`", "the default of `--host` (127.0.0.1)"),
    ("STOPLINE_PORT", "`serve`", "the default of `--port` (8420)"),
    (
        "STOPLINE_SECRET",
        "`serve`",
        "signs session cookies and CSRF tokens; required to listen"
        " beyond loopback (unless a trusted proxy header is set)",
    ),
    (
        "STOPLINE_TRUST_PROXY_HEADER",
        "`serve`",
        "a header your authenticating proxy sets to"
        " the actor's name (e.g. X-Forwarded-User); a request carrying it is that actor",
    ),
    ("STOPLINE_READ_ONLY", "`serve`", "1: forms hidden, every command refused with 403"),
    ("STOPLINE_COOKIE_SECURE", "`serve`", "1: session cookies only over HTTPS"),
    ("STOPLINE_MAX_BODY", "`serve`", "the largest request body, in bytes"),
    (
        "STOPLINE_OVERDUE_AFTER",
        "`serve`",
        "seconds an item may stay stopped before the inbox"
        " and the API call it overdue (default one day)",
    ),
    (
        "STOPLINE_WEBHOOKS",
        "`run`, `serve`",
        "webhook URLs to notify of stops ([webhooks.md](webhooks.md))",
    ),
    (
        "STOPLINE_WEBHOOK_SECRET",
        "`run`, `serve`",
        "the whsec_ secret (24 to 64 bytes) of endpoints that name none of their own",
    ),
    (
        "STOPLINE_WEBHOOK_RETRY",
        "`run`, `serve`",
        "waits between notification attempts, e.g. 5s,5m,30m,2h,5h,10h,10h (the default)",
    ),
    ("STOPLINE_WEBHOOK_JITTER", "`run`, `serve`", "random spread of each wait (default 0.2)"),
    ("STOPLINE_SMTP_URL", "`run`, `serve`", "smtp://HOST[:PORT] for mailto: endpoints"),
    ("STOPLINE_SMTP_FROM", "`run`, `serve`", "the sender of notification emails"),
    (
        "STOPLINE_LOG_FORMAT",
        "`run`, `serve`",
        "the default of `--log-format` (text or json)",
    ),
    ("STOPLINE_BASE_URL", "`run`, `serve`", "the inbox address that webhook links point to"),
    ("STOPLINE_NOTIFY_INTERVAL", "`run`, `serve`", "seconds between notifier rounds (default 5)"),
    (
        "STOPLINE_DEMO_DRAFTS",
        "`demo`",
        "the folder the demo writes its drafts to (default ./stopline-drafts)",
    ),
    (
        "STOPLINE_CRASH_AT",
        "workers (tests only)",
        "the worker dies at the named delivery"
        " boundary, as after SIGKILL; the crash tests use it, never set it in production",
    ),
)

TRUST = (
    "**The CLI trusts `--actor`.** Anyone who can run `stopline` against a database can act"
    " as any actor registered in it: one shell can approve as alice and then as bob. The"
    " registry checks roles and separation of duties, not who typed the command. Until signed"
    " mode exists, give access to the database only to the people the registry names. The web"
    " inbox and the HTTP API authenticate each person by token (or a trusted proxy header)."
)


def _value(field: Field) -> str:
    if field.type is Type.BOOL:
        return ""
    return (
        f" {field.placeholder}"
        if not field.limits.choices
        else " " + "|".join(field.limits.choices)
    )


def _usage(name: str, parser: argparse.ArgumentParser) -> str:
    words = ["stopline", name]
    optional = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or "--help" in action.option_strings:
            continue
        if isinstance(action, argparse._SubParsersAction):
            words.append("{" + ",".join(action.choices) + "}")
            continue
        if not action.option_strings:
            words.append(str(action.metavar or action.dest).upper())
            continue
        flag = action.option_strings[-1]
        value = ""
        if action.nargs != 0:
            value = " " + (
                "|".join(str(c) for c in action.choices)
                if action.choices
                else str(action.metavar or action.dest.upper())
            )
        text = f"{flag}{value}"
        if action.required:
            words.append(text)
        else:
            optional.append(f"[{text}]")
    return " ".join(words + optional)


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    node = parser
    for part in name.split(" "):
        for action in node._actions:
            if isinstance(action, argparse._SubParsersAction):
                node = action.choices[part]
                break
    return node


def cli_markdown(parser: argparse.ArgumentParser) -> str:
    out = [
        "# The command line",
        "",
        "Generated from the argument parser and the command table by"
        " `python -m stopline.cli.docgen`; do not edit by hand. A test fails when this file and"
        " the code disagree.",
        "",
        TRUST,
        "",
        "## The database",
        "",
        "Every command that uses a database takes `--db URL` (else `STOPLINE_DATABASE_URL`,"
        " else `sqlite:///stopline.db`; `postgresql://...` selects PostgreSQL) and `--json`"
        " (exactly one JSON document on standard output). Only `migrate`, `run`, `demo` and"
        " `actors add` create a database; every other command needs one that exists and says"
        " so (exit 2, and the `stopline migrate` line that creates it) instead of creating an"
        " empty one from a mistyped URL. A database that cannot be reached is one line and"
        " exit 2 within a few seconds. Text output writes each character that is not"
        " printable as its escape (`\\x1b`, `\\r`): a note, a hook's message or an item's"
        " data cannot send a terminal its control sequences; `--json` keeps every text exact.",
        "",
        "## Exit statuses",
        "",
        "| status | means |",
        "| --- | --- |",
    ]
    out += [f"| {code} | {cell(text)} |" for code, text in EXIT_STATUSES]
    out += [
        "",
        "## Refusals",
        "",
        "A refused command prints its reason codes and, for each, one sentence with the"
        " specifics: the roles needed and who holds them, who proposed and who edited, who may"
        " still approve, how old the evidence is. When the proposal changed since you read it,"
        " the refusal shows what changed, field by field, and sends you to `stopline show`"
        " instead of offering the new digest to approve. The JSON form is the decision",
        "",
        "```json",
        json.dumps(
            {
                "decision": "refused",
                "reasons": ["actor_not_authorized"],
                "item": "itm_...",
                "state": "awaiting_approval",
                "sequence": None,
                "explanation": ["actor_not_authorized: approving restart needs one of ..."],
                "details": {"approvals": {"required": 2, "eligible": ["bob"], "...": "..."}},
            },
            indent=2,
        ),
        "```",
        "",
        "`explanation` (one sentence per reason code) and `details` (`diff`: the changed"
        " fields; `approvals`: who may still approve and whether the proposal can still be"
        " approved at all; `fields`: the fields in which the object a `reconcile` found differs"
        " from what was sent) are added to the decision; the other fields are as they were.",
        "",
        f"Digests may be typed as a prefix of at least {MIN_PREFIX} characters when it names"
        " exactly one digest the item holds (its current proposal, the one an edit replaced,"
        " its review packet). A shorter or ambiguous prefix is exit 2 and runs nothing.",
        "",
        "## Reason codes",
        "",
        "| code | means |",
        "| --- | --- |",
    ]
    out += [f"| `{r.value}` | {cell(MEANINGS[r])} |" for r in Reason]
    out += ["", "## Commands", ""]
    for command in commands(parser):
        sub = _subparser(parser, command.name)
        out += [f"### `stopline {command.name}`", "", cell(command.help), ""]
        out += ["```", _usage(command.name, sub), "```", ""]
        rows = [
            (", ".join(a.option_strings), a.help or "")
            for a in sub._actions
            if a.option_strings and a.help != argparse.SUPPRESS and "--help" not in a.option_strings
        ]
        if rows:
            out += ["| flag | meaning |", "| --- | --- |"]
            out += [f"| `{flag}` | {cell(text)} |" for flag, text in rows]
            out.append("")
        if sub.epilog:
            out += [cell(sub.epilog), ""]
    out += [
        "## Environment variables",
        "",
        "| variable | read by | meaning |",
        "| --- | --- | --- |",
    ]
    out += [f"| `{n}` | {who} | {cell(text)} |" for n, who, text in ENVIRONMENT]
    out += [
        "",
        "## Shell completion",
        "",
        "`stopline completion bash|zsh|fish` prints a completion script generated from the"
        " parser: `source <(stopline completion bash)` in `~/.bashrc`; `stopline completion zsh"
        " > ~/.zfunc/_stopline` with `~/.zfunc` on `fpath`; `stopline completion fish >"
        " ~/.config/fish/completions/stopline.fish`.",
        "",
    ]
    return "\n".join(out)


def rendered() -> dict[Path, str]:
    from .main import build_parser

    return {CLI_DOC: cli_markdown(build_parser()), HTTP_DOC: http_markdown()}


def stale(files: dict[Path, str] | None = None) -> list[Path]:
    """The files whose content differs from what the code generates."""
    found = []
    for path, text in (files or rendered()).items():
        try:
            current = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = None
        if current != text:
            found.append(path)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stopline.cli.docgen",
        description="Generate docs/cli.md and docs/http.md from the parser and command table.",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is stale")
    args = parser.parse_args(argv)
    files = rendered()
    behind = stale(files)
    if args.check:
        for path in behind:
            print(f"{path} is out of date; run: python -m stopline.cli.docgen", file=sys.stderr)
        return 1 if behind else 0
    for path in behind:
        with path.open("w", encoding="utf-8", newline="\n") as out:
            out.write(files[path])
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
