"""The JSON Schema of a command's body, from its fields' types and limits (for the OpenAPI
document, and for any shell that describes its commands to a machine)."""

from __future__ import annotations

from typing import Any

from .entry import Entry, HasFields
from .fields import Field, Limits, Type

NO_NUL = "^[^\\x00]*$"
NOT_BLANK = "^[^\\x00]*\\S[^\\x00]*$"


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


def body_schema(entry: Entry | HasFields) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {f.name: field_schema(f) for f in entry.fields},
        "required": [f.name for f in entry.fields if f.required],
    }
