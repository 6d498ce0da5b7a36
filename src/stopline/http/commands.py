"""Every command of the CLI as an HTTP command: its fields, their validation, and the one
controller call it makes. The JSON API and the web forms both go through :func:`execute`.

Malformed input (an unknown field, a wrong type, an empty required reason) is refused here
with the list of problems (HTTP 422) before the controller is called, as the CLI exits 2.
The actor is never a field: it is always the authenticated identity.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..controller import Controller
from ..core.decision import Decision

MAX_TEXT = 10_000
MAX_KEY = 200
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
NO_NUL = "^[^\\x00]*$"


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # text | reason | digest | bool | object | int | keys | verdict
    required: bool = False
    doc: str = ""


@dataclass(frozen=True)
class Values:
    """Validated fields of one command, with the authenticated actor."""

    actor: str
    fields: Mapping[str, Any]
    idempotency_key: str | None
    app_spec: str | None

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)


Runner = Callable[[Controller, str, Values], Decision]


@dataclass(frozen=True)
class CommandSpec:
    name: str
    summary: str
    fields: tuple[Field, ...]
    run: Runner
    takes_actor: bool = True


def _approve(c: Controller, ref: str, v: Values) -> Decision:
    return c.approve(
        ref, proposal=v.get("proposal"), actor=v.actor, idempotency_key=v.idempotency_key
    )


def _reject(c: Controller, ref: str, v: Values) -> Decision:
    return c.reject(
        ref,
        actor=v.actor,
        reason=v.get("reason"),
        send_back=bool(v.get("return", False)),
        proposal=v.get("proposal"),
        idempotency_key=v.idempotency_key,
    )


def _edit(c: Controller, ref: str, v: Values) -> Decision:
    return c.edit(ref, actor=v.actor, params=v.get("params"), idempotency_key=v.idempotency_key)


def _reinspect(c: Controller, ref: str, v: Values) -> Decision:
    return c.reinspect(
        ref, actor=v.actor, reason=v.get("reason"), idempotency_key=v.idempotency_key
    )


def _acknowledge(c: Controller, ref: str, v: Values) -> Decision:
    return c.acknowledge(
        ref, actor=v.actor, reason=v.get("reason", ""), idempotency_key=v.idempotency_key
    )


def _resolve(c: Controller, ref: str, v: Values) -> Decision:
    return c.resolve(
        ref,
        actor=v.actor,
        reason=v.get("reason"),
        input=v.get("input") or {},
        idempotency_key=v.idempotency_key,
    )


def _resume(c: Controller, ref: str, v: Values) -> Decision:
    return c.resume(
        ref,
        actor=v.actor,
        reason=v.get("reason"),
        attempts=v.get("attempts"),
        idempotency_key=v.idempotency_key,
    )


def _close(c: Controller, ref: str, v: Values) -> Decision:
    return c.close(ref, actor=v.actor, reason=v.get("reason"), idempotency_key=v.idempotency_key)


def _finalize(c: Controller, ref: str, v: Values) -> Decision:
    return c.finalize(ref, idempotency_key=v.idempotency_key)


def _revise(c: Controller, ref: str, v: Values) -> Decision:
    return c.revise(
        ref,
        actor=v.actor,
        reason=v.get("reason"),
        artifacts=list(v.get("artifacts")),
        idempotency_key=v.idempotency_key,
    )


def _review(c: Controller, ref: str, v: Values) -> Decision:
    return c.review(
        ref,
        packet=v.get("packet"),
        verdict=v.get("verdict"),
        actor=v.actor,
        reason=v.get("reason", ""),
        idempotency_key=v.idempotency_key,
    )


def _publish(c: Controller, ref: str, v: Values) -> Decision:
    from ..runtime.operations import publish

    return publish(
        c,
        ref,
        packet=v.get("packet"),
        actor=v.actor,
        app_spec=v.app_spec,
        idempotency_key=v.idempotency_key,
    )


def _reconcile(c: Controller, ref: str, v: Values) -> Decision:
    from ..runtime.operations import reconcile

    return reconcile(
        c,
        ref,
        key=v.get("artifact"),
        actor=v.actor,
        app_spec=v.app_spec,
        idempotency_key=v.idempotency_key,
    )


REASON = Field("reason", "reason", True, "why (recorded in the history)")
NOTE = Field("reason", "text", False, "an optional note")
PACKET = Field("packet", "digest", True, "the digest of the review packet")

COMMANDS: dict[str, CommandSpec] = {
    s.name: s
    for s in (
        CommandSpec(
            "approve",
            "Approve exactly one proposal digest",
            (Field("proposal", "digest", True, "the digest of the proposal being approved"),),
            _approve,
        ),
        CommandSpec(
            "reject",
            "Close without action, or with return=true send back to be proposed again",
            (
                REASON,
                Field("return", "bool", False, "send back to be proposed again"),
                Field("proposal", "digest", False, "bind the rejection to this digest"),
            ),
            _reject,
        ),
        CommandSpec(
            "edit",
            "Edit the proposal's parameters: a new digest, every approval of the old one void",
            (Field("params", "object", True, "the new parameters"),),
            _edit,
        ),
        CommandSpec("reinspect", "Back to observing for fresh evidence", (REASON,), _reinspect),
        CommandSpec("acknowledge", "ready_for_review -> closed", (NOTE,), _acknowledge),
        CommandSpec(
            "resolve",
            "exception -> observing, with corrective input",
            (REASON, Field("input", "object", False, "corrective input for the observe hook")),
            _resolve,
        ),
        CommandSpec(
            "resume",
            "exhausted -> its work state, with a new, recorded budget",
            (REASON, Field("attempts", "int", False, "attempts granted (capped by the policy)")),
            _resume,
        ),
        CommandSpec("close", "Any stop state -> closed", (REASON,), _close),
        CommandSpec(
            "revise",
            "Open (or resume, with the same request) a revision of a completed delivery",
            (REASON, Field("artifacts", "keys", True, "the artifacts in scope")),
            _revise,
        ),
        CommandSpec(
            "review",
            "A verdict on a delivered review packet",
            (
                PACKET,
                Field("verdict", "verdict", True, "approve or reject"),
                NOTE,
            ),
            _review,
        ),
        CommandSpec(
            "reconcile",
            "Find a remote object by its key, verify it by readback and bind it; never creates",
            (Field("artifact", "digest", True, "the artifact key"),),
            _reconcile,
        ),
        CommandSpec(
            "publish",
            "Publish an approved review packet (delivery mode publish)",
            (PACKET,),
            _publish,
        ),
        CommandSpec(
            "finalize",
            "Idempotent completion check: zero_write on a completed item",
            (),
            _finalize,
            takes_actor=False,
        ),
    )
}


def _problem(name: str, value: Any, kind: str) -> str | None:
    if kind in ("text", "reason", "digest", "verdict"):
        if not isinstance(value, str):
            return f"{name} must be a string"
        if "\x00" in value:
            return f"{name} must not contain NUL characters"
        limit = MAX_KEY if kind == "digest" else MAX_TEXT
        if len(value) > limit:
            return f"{name} is longer than {limit} characters"
        if kind == "reason" and not value.strip():
            return f"{name} must not be empty"
        if kind == "digest" and not value:
            return f"{name} must not be empty"
        if kind == "verdict" and value not in ("approve", "reject"):
            return f"{name} must be 'approve' or 'reject'"
        return None
    if kind == "bool":
        return None if isinstance(value, bool) else f"{name} must be true or false"
    if kind == "object":
        return None if isinstance(value, dict) else f"{name} must be a JSON object"
    if kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok and INT_MIN <= value <= INT_MAX else f"{name} must be an integer"
    if kind == "keys":
        if not isinstance(value, list) or not value or len(value) > 100:
            return f"{name} must be a list of 1 to 100 keys"
        for key in value:
            if _problem(name, key, "digest"):
                return f"{name} must hold non-empty strings of at most {MAX_KEY} characters"
        return None
    raise AssertionError(kind)


def validate(spec: CommandSpec, body: Any) -> tuple[dict[str, Any], list[str]]:
    """The fields of ``body`` for ``spec``, and every problem found (empty when valid)."""
    if not isinstance(body, dict):
        return {}, ["the body must be a JSON object"]
    problems: list[str] = []
    known = {f.name: f for f in spec.fields}
    for name in body:
        if name == "actor":
            problems.append("actor is not a field: the actor is the authenticated identity")
        elif name not in known:
            problems.append(f"unknown field {name!r}")
    values: dict[str, Any] = {}
    for f in spec.fields:
        if f.name not in body:
            if f.required:
                problems.append(f"{f.name} is required")
            continue
        value = body[f.name]
        if f.kind == "int" and isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON Schema: 3.0 is an integer
        problem = _problem(f.name, value, f.kind)
        if problem:
            problems.append(problem)
        else:
            values[f.name] = value
    return values, problems


def check_idempotency_key(value: str | None) -> str | None:
    """A problem with an ``Idempotency-Key`` header value, else ``None``."""
    if value is None:
        return None
    if not 1 <= len(value) <= MAX_KEY or not all("!" <= c <= "~" for c in value):
        return f"Idempotency-Key must be 1 to {MAX_KEY} printable ASCII characters, no spaces"
    return None


def execute(controller: Controller, spec: CommandSpec, ref: str, values: Values) -> Decision:
    return spec.run(controller, ref, values)


# --- JSON Schema of a command's body (for the OpenAPI document) -----------------------------


def field_schema(f: Field) -> dict[str, Any]:
    text: dict[str, Any] = {"type": "string", "pattern": NO_NUL}
    schema: dict[str, Any] = {
        "text": {**text, "maxLength": MAX_TEXT},
        "reason": {**text, "maxLength": MAX_TEXT, "pattern": "^[^\\x00]*\\S[^\\x00]*$"},
        "digest": {**text, "minLength": 1, "maxLength": MAX_KEY},
        "bool": {"type": "boolean"},
        "object": {"type": "object"},
        "int": {"type": "integer", "minimum": INT_MIN, "maximum": INT_MAX},
        "keys": {
            "type": "array",
            "minItems": 1,
            "maxItems": 100,
            "items": {**text, "minLength": 1, "maxLength": MAX_KEY},
        },
        "verdict": {"type": "string", "enum": ["approve", "reject"]},
    }[f.kind]
    return {**schema, "description": f.doc}


def body_schema(spec: CommandSpec) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {f.name: field_schema(f) for f in spec.fields},
        "required": [f.name for f in spec.fields if f.required],
    }
