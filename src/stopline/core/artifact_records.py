"""The artifact records an item holds (``data["artifacts"]``): staged content, its QA, where
it was delivered and what was read back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .artifacts import Artifact
from .canonical import digest
from .commands import QAResult
from .records import Item


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
