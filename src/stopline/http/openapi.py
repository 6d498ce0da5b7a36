"""The OpenAPI 3.1 document of the JSON API, built from the command table."""

from __future__ import annotations

from typing import Any

from ..commands.entry import Entry, Shell
from ..commands.fields import MAX_KEY
from ..commands.schema import body_schema
from ..commands.table import exposed
from ..core.rights import Authority
from ..core.severity import SEVERITIES
from ..server.item_ref import ITEM_PATTERN
from .api import CLASSES, MAX_LIMIT, STATES

REF = "#/components/schemas/"
NULLABLE_STR = {"type": ["string", "null"]}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF + name}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


ERRORS = {
    "401": _json(_ref("Error"), "No valid bearer token (missing, unknown or revoked)."),
    "403": _json(
        _ref("Error"), "A viewer (no role gives any command right) or a read-only server."
    ),
    "404": _json(_ref("Error"), "No such route."),
    "413": _json(_ref("Error"), "The body is larger than the server's limit (64 KiB by default)."),
    "422": _json(_ref("Error"), "Malformed input: every problem is listed; nothing was written."),
}

SCHEMAS: dict[str, Any] = {
    "Decision": {
        "type": "object",
        "description": "The decision JSON of the contract. Nothing is written unless applied.",
        "required": ["decision", "reasons", "item", "state", "sequence"],
        "properties": {
            "decision": {"type": "string", "enum": ["applied", "zero_write", "refused"]},
            "reasons": {"type": "array", "items": {"type": "string"}},
            "item": NULLABLE_STR,
            "state": {"type": ["string", "null"], "enum": [*STATES, None]},
            "sequence": {"type": ["integer", "null"]},
            "explanation": {
                "type": "array",
                "items": {"type": "string"},
                "description": "The specifics behind a reason (signature_invalid: why).",
            },
        },
    },
    "Error": {
        "type": "object",
        "required": ["error", "message", "problems"],
        "properties": {
            "error": {"type": "string"},
            "message": {"type": "string"},
            "problems": {"type": "array", "items": {"type": "string"}},
        },
    },
    "ItemSummary": {
        "type": "object",
        "required": [
            "id",
            "automation",
            "key",
            "state",
            "state_class",
            "attempts",
            "max_attempts",
            "age_seconds",
            "overdue",
        ],
        "properties": {
            "id": {"type": "string"},
            "automation": {"type": "string"},
            "key": {"type": "string"},
            "state": {"type": "string", "enum": STATES},
            "state_class": {"type": "string", "enum": CLASSES},
            "attempts": {"type": "integer"},
            "max_attempts": {"type": "integer"},
            "updated_at": {"type": "string"},
            "next_eligible_at": {"type": "string"},
            "proposal_digest": NULLABLE_STR,
            "why": {"type": "string"},
            "next": {"type": "array", "items": {"type": "string"}},
            "age_seconds": {"type": "number"},
            "overdue": {"type": "boolean"},
        },
    },
    "ItemList": {
        "type": "object",
        "required": ["items"],
        "properties": {"items": {"type": "array", "items": _ref("ItemSummary")}},
    },
    "Item": {
        "type": "object",
        "description": "`stopline show --json` (docs/cli.md), with age_seconds and overdue.",
        "required": [
            "id",
            "automation",
            "key",
            "state",
            "history_length",
            "attempts",
            "max_attempts",
            "next_eligible_at",
            "account",
            "proposal",
            "artifacts",
            "revision",
            "integrity",
        ],
        "properties": {
            "id": {"type": "string"},
            "integrity": {
                "type": "object",
                "description": "Whether the record is what its history sealed; when not, it is"
                " shown as stored and every command on it but close is refused.",
                "required": ["ok", "findings"],
                "properties": {
                    "ok": {"type": "boolean"},
                    "findings": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["kind", "ref", "field", "reason", "detail"],
                        },
                    },
                },
            },
            "automation": {"type": "string"},
            "key": {"type": "string"},
            "state": {"type": "string", "enum": STATES},
            "history_length": {"type": "integer"},
            "severity": {"type": "string", "enum": list(SEVERITIES)},
            "attempts": {"type": "integer"},
            "max_attempts": {"type": "integer"},
            "next_eligible_at": {"type": "string"},
            "account": {"type": ["object", "null"]},
            "proposal": {
                "oneOf": [
                    {"type": "null"},
                    {
                        "type": "object",
                        "required": [
                            "digest",
                            "action",
                            "params",
                            "required_roles",
                            "required_approvals",
                            "approvals",
                        ],
                        "properties": {
                            "digest": {"type": "string"},
                            "action": {"type": "string"},
                            "params": {},
                            "required_roles": {"type": "array", "items": {"type": "string"}},
                            "required_approvals": {"type": "integer"},
                            "approvals": {
                                "type": "array",
                                "items": {"type": "object", "required": ["actor", "at", "digest"]},
                            },
                        },
                    },
                ]
            },
            "artifacts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["key", "content_hash", "qa_hash", "remote_id", "readback_hash"],
                },
            },
            "revision": {
                "oneOf": [
                    {"type": "null"},
                    {"type": "object", "required": ["sequence", "state", "request_digest"]},
                ]
            },
            "age_seconds": {"type": "number"},
            "overdue": {"type": "boolean"},
        },
    },
    "Event": {
        "type": "object",
        "required": [
            "item_id",
            "seq",
            "at",
            "command",
            "actor",
            "from_state",
            "to_state",
            "reasons",
            "hash",
        ],
        "properties": {
            "item_id": {"type": "string"},
            "seq": {"type": "integer"},
            "at": {"type": "string"},
            "command": {"type": "string"},
            "actor": {"type": "string"},
            "from_state": NULLABLE_STR,
            "to_state": {"type": "string"},
            "reasons": {"type": "array", "items": {"type": "string"}},
            "digests": {"type": "object"},
            "detail": {"type": "object"},
            "prev_hash": {"type": "string"},
            "hash": {"type": "string"},
        },
    },
    "History": {
        "type": "object",
        "required": ["item", "events"],
        "properties": {
            "item": {"type": "string"},
            "events": {"type": "array", "items": _ref("Event")},
        },
    },
    "Me": {
        "type": "object",
        "required": ["actor", "roles", "can_command", "read_only", "mode"],
        "properties": {
            "actor": {"type": "string"},
            "roles": {"type": "array", "items": {"type": "string"}},
            "can_command": {"type": "boolean"},
            "read_only": {"type": "boolean"},
            "mode": {
                "type": "string",
                "enum": ["signed", "unsigned"],
                "description": "signed: this server's host has a trust root (docs/security.md)",
            },
        },
    },
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
    "description": "The same key with the same command replays the original decision as "
    "zero_write; with a different command it is refused idempotency_key_reuse.",
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
    unknown = _json(_ref("Decision"), "No such item: refused unknown_item.")
    auth_errors = {k: ERRORS[k] for k in ("401", "404", "422")}
    text = {"type": "string", "maxLength": 200, "pattern": "^[^\\x00]*$"}
    return {
        "/api/me": {
            "get": {
                "operationId": "me",
                "summary": "Who the token belongs to, and whether it may run commands",
                "responses": {
                    "200": _json(_ref("Me"), "The authenticated actor."),
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
                    "200": _json(_ref("ItemList"), "The items."),
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
                    "200": _json(_ref("Item"), "The item."),
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
                    "200": _json(_ref("History"), "The events."),
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
                "required": bool(entry.fields),
                "content": {"application/json": {"schema": body_schema(entry)}},
            },
            "responses": {
                "200": _json(_ref("Decision"), "applied or zero_write."),
                "409": _json(_ref("Decision"), "refused, with every reason; nothing written."),
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
