"""The JSON Schema of a command's body, from its fields' types and limits (for the OpenAPI
document, and for any shell that describes its commands to a machine)."""

from __future__ import annotations

from typing import Any

from ..core.authorship import KINDS, MAX_AUTHOR_TEXT
from .entry import AUTHOR, Entry, HasFields
from .fields import MAX_KEY, Field, Limits, Type

NO_NUL = "^[^\\x00]*$"
NOT_BLANK = "^[^\\x00]*[^\\x00\\s][^\\x00]*$"  # a character neither NUL nor white space


def _text(limits: Limits) -> dict[str, Any]:
    if limits.choices:
        return {"type": "string", "enum": list(limits.choices)}
    schema: dict[str, Any] = {
        "type": "string",
        "pattern": NOT_BLANK if limits.not_blank else NO_NUL,
    }
    if limits.min_length:
        schema["minLength"] = limits.min_length
    if limits.max_length is not None:
        schema["maxLength"] = limits.max_length
    return schema


def value_schema(field: Field) -> dict[str, Any]:
    limits = field.limits
    if field.type is Type.TEXT:
        return _text(limits)
    if field.type is Type.BOOL:
        return {"type": "boolean"}
    if field.type is Type.OBJECT:
        return {"type": "object"}
    if field.type is Type.INT:
        schema: dict[str, Any] = {"type": "integer"}
        if limits.minimum is not None:
            schema["minimum"] = limits.minimum
        if limits.maximum is not None:
            schema["maximum"] = limits.maximum
        return schema
    schema = {"type": "array", "minItems": limits.min_items, "items": _text(limits)}
    if limits.max_items is not None:
        schema["maxItems"] = limits.max_items
    return schema


def field_schema(field: Field) -> dict[str, Any]:
    return {**value_schema(field), "description": field.help}


def _declared_text(what: str) -> dict[str, Any]:
    return {
        "type": "string",
        "pattern": NOT_BLANK,
        "minLength": 1,
        "maxLength": MAX_AUTHOR_TEXT,
        "description": f"with kind ai: the {what} the AI declares for itself",
    }


AUTHOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "who wrote the command, as the caller declares it (absent: human); recorded"
    " in the history as data, never a source of authority",
    "properties": {
        "kind": {"type": "string", "enum": list(KINDS)},
        "name": _declared_text("name"),
        "family": _declared_text("model family"),
    },
    "required": ["kind"],
}
KEY_SCHEMA: dict[str, Any] = {
    "type": "string",
    "pattern": "^[!-~]+$",
    "minLength": 1,
    "maxLength": MAX_KEY,
    "description": "an idempotency key (as the Idempotency-Key header; both given must agree)",
}


def body_schema(entry: Entry | HasFields) -> dict[str, Any]:
    properties = {f.name: field_schema(f) for f in entry.fields}
    if isinstance(entry, Entry) and entry.takes_actor:
        properties[AUTHOR] = AUTHOR_SCHEMA
    if isinstance(entry, Entry) and entry.idempotent:
        properties["idempotency_key"] = KEY_SCHEMA
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
        "required": [f.name for f in entry.fields if f.required],
    }
