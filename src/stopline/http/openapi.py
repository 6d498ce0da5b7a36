"""The OpenAPI 3.1 document of the JSON API, built from the command table."""

from __future__ import annotations

from typing import Any

from ..commands.entry import Entry, Shell
from ..commands.fields import MAX_KEY
from ..commands.schema import body_schema
from ..commands.table import exposed
from ..core.rights import Authority
from ..server.item_ref import ITEM_PATTERN
from .api import CLASSES, MAX_LIMIT, STATES
from .schemas import SCHEMAS, ref


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


ERRORS = {
    "401": _json(ref("Error"), "No valid bearer token (missing, unknown or revoked)."),
    "403": _json(ref("Error"), "A viewer (no role gives any command right) or a read-only server."),
    "404": _json(ref("Error"), "No such route."),
    "413": _json(ref("Error"), "The body is larger than the server's limit (64 KiB by default)."),
    "422": _json(ref("Error"), "Malformed input: every problem is listed; nothing was written."),
}

ITEM_PARAM = {
    "name": "item",
    "in": "path",
    "required": True,
    "description": "An item id (as listed by GET /api/items).",
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY, "pattern": ITEM_PATTERN},
}
IDEMPOTENCY_PARAM = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "The caller's own key: the same key with the same command replays the "
    "original decision as zero_write; with a different command it is refused "
    "idempotency_key_reuse. Another actor's key is another key.",
    "schema": {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_KEY,
        "pattern": "^[\\x21-\\x7e]+$",
    },
}


EMPTY = {"type": "string", "maxLength": 0}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    """A filter of a list: an empty value (``?state=``, as a form sends "any") is the same as
    leaving the filter out, so the schema takes it too."""
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": f"{description} (empty: no filter)",
        "schema": schema if schema.get("maxLength") is not None else {"anyOf": [schema, EMPTY]},
    }


def _reads() -> dict[str, Any]:
    unknown = _json(ref("Decision"), "No such item: refused unknown_item.")
    auth_errors = {k: ERRORS[k] for k in ("401", "404", "422")}
    text = {"type": "string", "maxLength": 200, "pattern": "^[^\\x00]*$"}
    return {
        "/api/me": {
            "get": {
                "operationId": "me",
                "summary": "Who the token belongs to, and whether it may run commands",
                "responses": {
                    "200": _json(ref("Me"), "The authenticated actor."),
                    "401": ERRORS["401"],
                },
            }
        },
        "/api/items": {
            "get": {
                "operationId": "listItems",
                "summary": "List and filter items (oldest change first)",
                "parameters": [
                    _query("state", {"type": "string", "enum": STATES}, "only this state"),
                    _query("state_class", {"type": "string", "enum": CLASSES}, "only this class"),
                    _query("automation", text, "only this automation"),
                    _query("key", text, "only this key"),
                    _query(
                        "overdue",
                        {"type": "string", "enum": ["true", "false", "1", "0"]},
                        "stopped longer than the server's overdue limit",
                    ),
                    _query(
                        "sort", {"type": "string", "enum": ["oldest", "newest"]}, "by last change"
                    ),
                    _query(
                        "limit",
                        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                        f"at most this many (1 to {MAX_LIMIT})",
                    ),
                ],
                "responses": {
                    "200": _json(ref("ItemList"), "The items."),
                    **{k: ERRORS[k] for k in ("401", "422")},
                },
            }
        },
        "/api/items/{item}": {
            "get": {
                "operationId": "showItem",
                "summary": "One item in full (stopline show --json)",
                "parameters": [ITEM_PARAM],
                "responses": {
                    "200": _json(ref("Item"), "The item."),
                    **auth_errors,
                    "404": unknown,
                },
            }
        },
        "/api/items/{item}/history": {
            "get": {
                "operationId": "itemHistory",
                "summary": "The item's events, oldest first",
                "parameters": [ITEM_PARAM],
                "responses": {
                    "200": _json(ref("History"), "The events."),
                    **auth_errors,
                    "404": unknown,
                },
            }
        },
    }


WHO = {
    Authority.OPERATOR: "an actor with the operator role",
    Authority.APPROVER: "an actor holding a role the proposal's approval rule requires, "
    "who is not its proposer or an editor when the rule separates duties",
    Authority.APPROVER_OR_OPERATOR: "an operator, or an actor holding a role the proposal's "
    "approval rule requires",
    Authority.PUBLISHER: "an actor holding a publish role of the automation's delivery policy",
    Authority.ANYONE: "any actor who may run commands (it never writes)",
    Authority.PARTICIPANT: "an actor holding any role that gives a right on the item: operator,"
    " a role of the automation's approval rules or of the proposal, a publish role (a viewer"
    " may not)",
}


AUTHOR_NOTE = (
    " `author` declares who wrote it (absent: human): recorded in the history as data, never"
    " a source of authority."
)


def _command(entry: Entry) -> dict[str, Any]:
    return {
        "post": {
            "operationId": entry.name,
            "summary": entry.help[:1].upper() + entry.help[1:],
            "description": "The actor is the authenticated identity; a body field `actor` is "
            f"refused (422).{AUTHOR_NOTE if entry.takes_actor else ''} Who may run it: "
            f"{WHO[entry.roles]}. Same command layer as `stopline {entry.name}`.",
            "parameters": [ITEM_PARAM, IDEMPOTENCY_PARAM] if entry.idempotent else [ITEM_PARAM],
            "requestBody": {
                # no body is no fields (api.parse_json): optional fields alone need none
                "required": any(field.required for field in entry.fields),
                "content": {"application/json": {"schema": body_schema(entry)}},
            },
            "responses": {
                "200": _json(ref("Decision"), "applied or zero_write."),
                "409": _json(ref("Decision"), "refused, with every reason; nothing written."),
                **ERRORS,
            },
        }
    }


def document() -> dict[str, Any]:
    paths = _reads()
    for entry in exposed(Shell.HTTP):
        paths[f"/api/items/{{item}}/{entry.name}"] = _command(entry)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "stopline",
            "version": "1",
            "description": "Items stop where a person must act; every command returns one "
            "decision (docs/http.md). Authenticate with `Authorization: Bearer <token>` "
            "(`stopline actors token NAME`).",
        },
        "paths": paths,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
