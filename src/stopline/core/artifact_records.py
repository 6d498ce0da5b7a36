"""The artifact records an item holds (``data["artifacts"]``): staged content, its QA, where
it was delivered and what was read back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .artifacts import Artifact
from .canonical import digest
from .commands import QAResult
from .records import Item

MAX_REMOTE_TEXT = 2048  # characters of a remote id or version: a path or URL, never a document


def remote_text_problem(text: object, *, empty_ok: bool = False) -> str | None:
    """Why ``text`` cannot be a remote identity (or, ``empty_ok``, its version) as a target
    answered it; ``None`` when it can. An id names one object: printable text of a bounded
    length, which the records and every database keep exactly."""
    if not isinstance(text, str):
        return f"is {type(text).__name__}, not text"
    if not text and not empty_ok:
        return "is empty"
    if len(text) > MAX_REMOTE_TEXT:
        return f"is longer than {MAX_REMOTE_TEXT} characters"
    if not text.isprintable():
        return "holds a character that is not printable (a control character, NUL or a newline)"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "is not Unicode text (a lone surrogate)"
    return None


def artifacts_of(item: Item) -> dict[str, dict[str, Any]]:
    return {a["key"]: dict(a) for a in item.doc("artifacts") or ()}


def readback_verified(record: Mapping[str, Any]) -> bool:
    """The artifact's stored object was read back holding exactly its current content."""
    return bool(record.get("readback_hash")) and record["readback_hash"] == record["content_hash"]


def listed(artifacts: Mapping[str, Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [artifacts[k] for k in sorted(artifacts)]


def qa_hash(content: str, qa: QAResult) -> str:
    return digest({"content_hash": content, "passed": qa.passed, "details": qa.details})


def staged_record(
    artifact: Artifact, qa: QAResult, base: Mapping[str, Any] | None
) -> dict[str, Any]:
    content = artifact.content_hash
    record: dict[str, Any] = {
        "key": artifact.key,
        "title": artifact.title,
        "content_hash": content,
        "qa_hash": qa_hash(content, qa),
        "qa": {"passed": qa.passed, "details": qa.details, "content_hash": content},
        "content": artifact.to_plain(),
        "remote_id": None,
        "remote_version": None,
        "readback_hash": None,
        "last_op": None,
        "intent": None,
    }
    if base is not None:  # a revision keeps the remote identity it updates
        record["remote_id"] = base.get("remote_id")
        record["remote_version"] = base.get("remote_version")
        record["idempotency_key"] = base.get("idempotency_key")
    return record
