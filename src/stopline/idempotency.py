"""Where a command's idempotency key is stored, and the decision stored under it."""

from __future__ import annotations

from .core.commands import Command
from .core.step import scoped_key
from .store import Store


def stored_decision(store: Store, command: Command, key: str) -> tuple[str, tuple[str, str] | None]:
    """The key as ``command``'s decision is stored under it (:func:`scoped_key`) and the
    ``(command digest, decision)`` stored there, if any. A key stored before keys were the
    actor's own (``key`` as given) still answers: if its command was this one it is replayed,
    and if not the key is refused as reused, as it was then; a command is never run twice."""
    stored = scoped_key(command, key)
    found = store.idempotency(stored)
    if found is None and stored != key:
        found = store.idempotency(key)
    return stored, found
