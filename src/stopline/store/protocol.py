"""The store protocol: what the runtime and the command layer need from a database.

Two implementations: :mod:`stopline.store.sqlite` (the embedded default) and
:mod:`stopline.store.postgres`. Every method is synchronous; every write is one transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from ..core.decision import Decision
from ..core.integrity import Finding
from ..core.ledger import LedgerEntry
from ..core.policy import Policy
from ..core.records import Actor, Event, Item
from ..core.registry import Registry
from .discovery_turns import DiscoveryTurn
from .heartbeats import Heartbeats
from .insights import Insights
from .outbox import Outbox
from .remote_holds import RemoteHolds
from .signouts import SignOuts


@dataclass(frozen=True)
class GuardReads:
    """What a worker reads before it acts (:meth:`Store.guard_reads`), from one snapshot."""

    item: Item | None
    head: Event | None
    legacy_seal: str | None
    registry: Registry | None = None
    history: list[Event] = field(default_factory=list)
    ledger: list[tuple[LedgerEntry, str | None]] = field(default_factory=list)


class Store(Protocol):
    url: str
    dialect: str

    def close(self) -> None: ...

    # the other ports of the same database
    @property
    def insights(self) -> Insights:
        """Aggregates and listings for metrics, the inbox and the API."""
        ...

    @property
    def outbox(self) -> Outbox:
        """The notification outbox."""
        ...

    @property
    def heartbeats(self) -> Heartbeats:
        """Worker heartbeats."""
        ...

    @property
    def signouts(self) -> SignOuts:
        """Web inbox sessions that were signed out."""
        ...

    @property
    def remote_holds(self) -> RemoteHolds:
        """Which item holds each remote object a target answered."""
        ...

    # schema
    def migrate(self) -> list[int]:
        """Apply pending migrations; returns the versions applied."""
        ...

    def schema_version(self) -> int: ...

    def check_schema(self) -> None:
        """Raise :class:`SchemaMismatch` unless the schema is exactly the one this code knows."""
        ...

    # automations
    def register_automation(self, name: str, policy: Policy, now: datetime) -> None: ...

    def policy(self, name: str) -> Policy | None: ...

    # items
    def get(self, item_id: str) -> Item | None: ...

    def find(self, automation: str, key: str) -> Item | None: ...

    def list_items(
        self,
        *,
        state: str | None = None,
        automation: str | None = None,
        state_class: str | None = None,
        key: str | None = None,
        newest: bool = False,
        limit: int = 1000,
    ) -> list[Item]:
        """Up to ``limit`` items that match every filter given, oldest change first (newest
        first with ``newest``)."""
        ...

    def count_by_state(self) -> list[dict[str, Any]]: ...

    def history(self, item_id: str) -> list[Event]: ...

    def head(self, item_id: str) -> tuple[Event | None, str | None]:
        """The item's last event by sequence, and the seal an upgrade recorded for it."""
        ...

    def current(self, item_id: str) -> tuple[Item | None, Event | None, str | None]:
        """:meth:`get` and :meth:`head` in one read: the item, its last event by sequence and
        that event's upgrade seal, from one snapshot (``(None, None, None)``: no such item)."""
        ...

    def current_many(self, ids: Sequence[str]) -> list[tuple[Item, Event | None, str | None]]:
        """:meth:`current` of each of ``ids`` that is stored, from one snapshot (in no set
        order)."""
        ...

    def guard_reads(self, item_id: str, *, history: bool, registry: bool) -> GuardReads:
        """:meth:`current`, and with ``history`` :meth:`history` and :meth:`item_ledger`, from
        one snapshot in one round trip; with ``registry`` :meth:`registry` too (checked in
        that round trip when the dialect can, else read as :meth:`registry` reads it)."""
        ...

    def guard_reads_many(self, item_ids: Sequence[str]) -> dict[str, GuardReads]:
        """:meth:`guard_reads` with ``history`` and ``registry`` for each of ``item_ids`` (the
        checks before acting of several items at once), keyed by item id; an id with no item
        is absent. In one snapshot and one round trip, the registry checked once, where the
        dialect can; else item by item."""
        ...

    def iter_items_with_events(self) -> Iterator[tuple[Item, list[Event]]]: ...

    def insert(self, decision: Decision) -> bool:
        """Write a discovery; ``False`` when the (automation, key) exists (nothing written)."""
        ...

    def apply(
        self,
        decision: Decision,
        *,
        idempotency: tuple[str, str, str] | None = None,
    ) -> bool:
        """Write ``decision.after`` and its event if the item is still at the version the
        decision was made from. ``False`` means another write came first (nothing written).
        ``idempotency`` is ``(key, command digest, decision json)`` stored in the same
        transaction."""
        ...

    # leases
    def claim(
        self,
        worker: str,
        now: datetime,
        lease_seconds: float,
        automations: Sequence[str] | None = None,
        *,
        leases: Mapping[str, float] | None = None,
    ) -> Item | None:
        """Claim the most overdue claimable step of ``automations`` (all when ``None``): count
        the attempt, take the lease with a new fencing token. The lease lasts ``leases[name]``
        seconds for an item of automation ``name``, ``lease_seconds`` for one not named."""
        ...

    def claim_batch(
        self,
        worker: str,
        now: datetime,
        lease_seconds: float,
        automations: Sequence[str] | None = None,
        *,
        leases: Mapping[str, float] | None = None,
        limit: int = 1,
    ) -> list[Item]:
        """Up to ``limit`` claims in one statement, each as :meth:`claim` takes one."""
        ...

    def claim_checked(
        self,
        worker: str,
        now: datetime,
        lease_seconds: float,
        automations: Sequence[str] | None = None,
        *,
        leases: Mapping[str, float] | None = None,
        limit: int = 1,
    ) -> list[tuple[Item, GuardReads]]:
        """:meth:`claim_batch`, each claimed item with its row, last event and that event's
        upgrade seal as :meth:`guard_reads` would read them (no history, no registry), from
        the claim's own transaction."""
        ...

    def apply_many(self, decisions: Sequence[Decision]) -> list[bool]:
        """Several applied decisions of different items in one transaction, each guarded by its
        own compare-and-set: per decision, ``True`` written or ``False`` another write came
        first (that decision only; never the whole group)."""
        ...

    def renew(self, item: Item, now: datetime, lease_seconds: float) -> bool: ...

    def sweepable(self, now: datetime, limit: int = 100) -> list[Item]: ...

    def next_due(self, automations: Sequence[str] | None = None) -> datetime | None: ...

    def wait_for_work(self, timeout: float) -> None:
        """Block until new work may be due (a notification) or ``timeout`` seconds pass."""
        ...

    # actors and tokens
    def actors(self) -> dict[str, Actor]: ...

    def set_actor(self, actor: Actor, change: str, detail: dict[str, Any], now: datetime) -> None:
        """Create or change an actor and append one audited actor event."""
        ...

    def actor_events(self) -> list[dict[str, Any]]: ...

    def append_registry(
        self, subject: str, change: str, detail: Mapping[str, Any], now: datetime
    ) -> None:
        """Append a registry event that changes no table (signed certificates, revocations)."""
        ...

    def registry(self) -> Registry:
        """Actors, tokens and policies as the registry chain records them, with every place
        where a table differs from the chain (``findings``)."""
        ...

    def add_token(
        self,
        actor: str,
        token_hash: str,
        now: datetime,
        signed: Mapping[str, Any] | None = None,
    ) -> None: ...

    def token_actor(self, token_hash: str) -> str | None: ...

    def revoke_tokens(self, actor: str, now: datetime) -> None: ...

    # idempotency, audit, schedules
    def idempotency(self, key: str) -> tuple[str, str] | None:
        """``(command digest, decision json)`` recorded under ``key``."""
        ...

    def record_refusal(
        self, decision: Decision, command: str, actor: str | None, now: datetime
    ) -> None:
        """Count a refusal in the audit: one row per (item, command, actor, reason codes) with
        ``count``, ``first_at`` and ``last_at`` (see ``docs/records.md``)."""
        ...

    def last_discovery(self, automation: str) -> datetime | None: ...

    def open_items(self, automation: str, most: int) -> int:
        """How many of ``automation``'s items have not ended (any state but a terminal one),
        counted up to ``most``."""
        ...

    def discovery_turn(self, automation: str, wait: float) -> DiscoveryTurn | None:
        """``automation``'s discovery turn, taken within ``wait`` seconds (``None``: not had):
        while one scheduler holds it, no other counts or creates that automation's items
        (``discovery_turns.py``). Give it back with ``end()``."""
        ...

    # what verify reads
    def ledger(self) -> list[LedgerEntry]: ...

    def item_ledger(self, item_id: str) -> list[tuple[LedgerEntry, str | None]]:
        """One item's ledger entries, each with the stored hash of its predecessor."""
        ...

    def idempotency_records(self) -> list[dict[str, Any]]: ...

    def legacy_seals(self) -> dict[str, tuple[str, str]]: ...

    def item_classes(self) -> list[tuple[str, str, str]]: ...

    def stop_keys(self) -> dict[str, tuple[datetime | None, int, str | None]]:
        """item id -> the inbox keys of its row (``state_since``, ``severity_rank``,
        ``search_text``)."""
        ...

    def document_findings(self) -> list[Finding]:
        """Every item row's reference to a document that is missing or no longer hashes to
        its digest (``document_missing``, ``document_altered``), and every altered body."""
        ...

    def set_last_discovery(self, automation: str, at: datetime) -> None: ...
