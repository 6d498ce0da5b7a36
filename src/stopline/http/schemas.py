"""The JSON schemas of the API's bodies: the components of the OpenAPI document."""

from __future__ import annotations

from typing import Any

from ..core.severity import SEVERITIES
from .api import CLASSES, STATES

REF = "#/components/schemas/"
NULLABLE_STR = {"type": ["string", "null"]}


def ref(name: str) -> dict[str, str]:
    return {"$ref": REF + name}


# Whether a shown record is what its history sealed (when not, every command but close is
# refused): ``ok``, and each finding (kind, ref, field, reason, detail).
_FINDING = {"type": "object", "required": ["kind", "ref", "field", "reason", "detail"]}
_INTEGRITY = {
    "type": "object",
    "required": ["ok", "findings"],
    "properties": {"ok": {"type": "boolean"}, "findings": {"type": "array", "items": _FINDING}},
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
        "properties": {"items": {"type": "array", "items": ref("ItemSummary")}},
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
            "integrity": _INTEGRITY,
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
            "events": {"type": "array", "items": ref("Event")},
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
