"""``docs/http.md``: the JSON API as the command table declares it (written by
:mod:`stopline.cli.docgen`)."""

from __future__ import annotations

import json

from ..commands.entry import Entry, Shell
from ..commands.fields import Field
from ..commands.schema import value_schema
from ..commands.table import exposed
from ..core.proposal_diff import MIN_PREFIX
from ..server.guard import SECURITY_HEADERS
from ..server.settings import MAX_BODY


def cell(text: str) -> str:
    """Text fit for one Markdown table cell: one line, pipes escaped."""
    return text.replace("|", "\\|").replace("\n", " ")


def _limits(field: Field) -> str:
    schema = value_schema(field)
    keep = {k: v for k, v in schema.items() if k not in ("pattern",)}
    return cell(json.dumps(keep, sort_keys=True))


def _entry_section(entry: Entry) -> list[str]:
    out = [
        f"### `POST /api/items/{{item}}/{entry.name}`",
        "",
        cell(entry.help) + f". Who: {entry.roles.value.replace('_', ' ')}.",
        "",
    ]
    if entry.fields:
        out += ["| field | required | type and limits | meaning |", "| --- | --- | --- | --- |"]
        out += [
            f"| `{f.name}` | {'yes' if f.required else 'no'} | `{_limits(f)}` | {cell(f.help)} |"
            for f in entry.fields
        ]
    else:
        out.append("No body (or `{}`).")
    out.append("")
    if entry.takes_actor:
        out += ["Takes `author` (see [Who wrote a command](#who-wrote-a-command)).", ""]
    if entry.idempotent:
        out += [
            "Takes an `Idempotency-Key` header (or `idempotency_key` in the body; both given"
            " must agree), the caller's own (see [Idempotency keys](records.md#idempotency-keys)).",
            "",
        ]
    return out


def _limits_and_headers() -> list[str]:
    return [
        "## Body limit and headers",
        "",
        f"A request body may hold at most `STOPLINE_MAX_BODY` bytes ({MAX_BODY:,} by default):"
        " a body of exactly that size is read, and one byte more is 413 before anything parses"
        " it, whether its `Content-Length` says so or it arrives in chunks; a `Content-Length`"
        " that is not a number is 413 too. The 413 answer closes the connection.",
        "",
        "Every response, the web inbox's and the 413 answer included, carries these headers"
        " (a response that sets one of them itself keeps its own value):",
        "",
        "| header | value |",
        "| --- | --- |",
        *(f"| `{name.decode()}` | `{value.decode()}` |" for name, value in SECURITY_HEADERS),
        "",
    ]


def http_markdown() -> str:
    out = [
        "# The HTTP API",
        "",
        "Generated from the command table by `python -m stopline.cli.docgen`; do not edit by"
        " hand. A test fails when this file and the table disagree. `stopline serve` serves"
        " it (with the web inbox and `GET /openapi.json`, the same API as OpenAPI 3.1).",
        "",
        "## Authentication",
        "",
        "Every request sends `Authorization: Bearer <token>`; `stopline actors token NAME`"
        " prints one (shown once, only its hash is stored). The command is run as that actor:"
        " a body never names one.",
        "",
        "## Status codes",
        "",
        "| status | means |",
        "| --- | --- |",
        "| 200 | `applied` or `zero_write` |",
        "| 401 | no valid bearer token |",
        "| 403 | a viewer (no role that may run a command), or a read-only server |",
        "| 404 | no such item (reads) |",
        "| 409 | `refused`, with every reason code and its explanation |",
        "| 413 | a body over the limit (`STOPLINE_MAX_BODY`) |",
        "| 422 | malformed input (a field, a filter, an idempotency key, a digest prefix);"
        " nothing was run |",
        "",
        *_limits_and_headers(),
        "## Reading",
        "",
        "- `GET /api/me`: the actor, their roles, whether they may command.",
        "- `GET /api/items`: stopped and working items; filters `state`, `state_class`,"
        " `automation`, `key`, `overdue` (true/false), `sort` (oldest/newest), `limit` (1 to"
        " 1000; every filter but `overdue` applies before the limit, `overdue` to the first"
        " 1000 in the sort order); an empty filter is no filter, and an unknown one is 422 (a"
        " mistyped filter"
        " never lists everything). Each row carries `why`, `next` (the commands to type),"
        " `approvable` (`false`: a waiting proposal can never get its approvals; `null`:"
        " nothing waits) and `integrity`: each row is read with its last event and checked"
        " against it, as `GET /api/items/{item}` checks one (a row that is not what its"
        " history sealed has `ok` false, its first finding as `why`, and `close` alone as"
        " `next`).",
        "- `GET /api/items/{item}`: one item (`item` is its id or `AUTOMATION/KEY`), as `stopline"
        " show --json` prints it; a waiting proposal carries `outlook` (who may still approve,"
        " who may not and why, whether it can still be approved), and `integrity` says whether"
        " the record is what its history sealed (`ok`; else every `findings` entry: the record"
        " is shown as stored, and every command on it but `close` is refused"
        " `integrity_failed`; approve nothing you read from it).",
        "- `GET /api/items/{item}/history`: its events, oldest first.",
        "",
        "## Commands",
        "",
        "Every command answers with the decision JSON: `decision` (`applied`, `zero_write`,"
        " `refused`), `reasons`, `item`, `state`, `sequence`, and `explanation` and `details`"
        " as [cli.md](cli.md#refusals) describes. The reason codes are listed in"
        " [cli.md](cli.md#reason-codes). A digest may be sent as a prefix of at least"
        f" {MIN_PREFIX} characters that names exactly one digest the item holds.",
        "",
        "A command's body is a JSON object of its fields; no body at all is the same as `{}`,"
        " so a command whose fields are all optional (`acknowledge`, `finalize`) may be sent"
        " without one. The OpenAPI document (`GET /openapi.json`) gives each parameter's"
        " bounds as the server keeps them.",
        "",
        "### Who wrote a command",
        "",
        'Every command that names an actor takes an optional `author` object: `{"kind":'
        ' "human"}` (what an absent `author` means), `{"kind": "automation"}`, or'
        ' `{"kind": "ai", "name": NAME, "family": FAMILY}` (the name and model family'
        " an AI declares for itself, 1 to 200 characters each; only an `ai` author takes them)."
        " It is recorded in the event ([records.md](records.md#who-wrote-an-event)) as data and"
        " never grants anything: who may run a command is decided from the authenticated actor's"
        " roles alone. A malformed `author` is 422 and nothing is run.",
        "",
    ]
    for entry in exposed(Shell.HTTP):
        out += _entry_section(entry)
    return "\n".join(out)
