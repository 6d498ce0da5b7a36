"""The next remote write of a delivery or a revision, planned from the item alone (pure).

The worker does the IO; this module says what it is. Artifacts are written one at a time, in
key order. For each, the plan is read from what the item recorded at the durable boundaries:

* no remote identity yet: **create**. An intent recorded by an earlier attempt means that
  attempt may have created the object and lost the reply: **look it up by its idempotency key
  first** and bind what is found; create (without a new intent) only when nothing is.
* a remote identity: **update** (a revision, or a new round of a delivery whose objects were
  bound before). An update intent of this delivery sequence means the update may have landed:
  **read the object first** and bind it when it already holds the new content.
* otherwise an intent is recorded first, then the call is made.

An artifact is written when it is bound by a create, a lookup or an update (a delivery), or
bound by an update (a revision, for the artifacts in its scope).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .records import Item
from .states import State

CREATE = "create"
UPDATE = "update"


@dataclass(frozen=True)
class NextWrite:
    """One remote write: which artifact, which call, and whether to look before calling."""

    key: str
    operation: str  # CREATE or UPDATE
    idempotency_key: str
    remote_id: str | None  # the bound object (an update)
    remote_version: str  # the version an update is conditional on
    content: Mapping[str, Any]  # the staged artifact, as stored (``Artifact.from_plain``)
    look_first: bool  # an earlier attempt recorded this intent and lost the outcome

    @property
    def record_intent(self) -> bool:
        """An intent is committed before the call (a retried intent already is)."""
        return not self.look_first


def artifact_records(item: Item) -> dict[str, Mapping[str, Any]]:
    """The item's staged artifacts by key."""
    return {record["key"]: record for record in item.doc("artifacts") or ()}


def revision_scope(item: Item) -> list[str]:
    """The artifact keys a revision rewrites, in order."""
    return sorted((item.doc("revision") or {}).get("scope", ()))


def staged(item: Item) -> bool:
    """The artifacts of this delivery (or revision) were rendered and recorded with their QA."""
    if item.state is State.REVISION_PREPARED:
        return bool((item.doc("revision") or {}).get("staged"))
    return bool(item.doc("staged"))


def written(item: Item, record: Mapping[str, Any]) -> bool:
    if item.state is State.REVISION_PREPARED:
        return record.get("last_op") == UPDATE
    return bool(record.get("remote_id")) and bool(record.get("last_op"))


def keys_to_write(item: Item) -> list[str]:
    """Every artifact this delivery (or revision) writes, in the order it writes them."""
    if item.state is State.REVISION_PREPARED:
        return revision_scope(item)
    return sorted(artifact_records(item))


def next_write(item: Item) -> NextWrite | None:
    """The first artifact still to be written and how; ``None`` when every one is."""
    records = artifact_records(item)
    for key in keys_to_write(item):
        record = records[key]
        if not written(item, record):
            return plan(item, key, record)
    return None


def plan(item: Item, key: str, record: Mapping[str, Any]) -> NextWrite:
    intent = record.get("intent")
    remote_id = record.get("remote_id")
    if remote_id:
        operation = UPDATE
        sequence = item.doc("delivery_seq") or 0
        look_first = (
            intent is not None
            and intent.get("operation") == UPDATE
            and intent.get("delivery_seq") == sequence
        )
    else:
        operation = CREATE
        look_first = intent is not None
    return NextWrite(
        key=key,
        operation=operation,
        idempotency_key=record["idempotency_key"],
        remote_id=remote_id or None,
        remote_version=record.get("remote_version") or "",
        content=record["content"],
        look_first=look_first,
    )
