"""The SQL store shared by both databases; dialects supply connections and value codecs."""

from __future__ import annotations

import hashlib
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import Any

from ..core.canonical import format_time, freeze, load_frozen, parse_time, storage_json
from ..core.decision import Decision
from ..core.integrity import item_seal
from ..core.ledger import (
    CREATE,
    REGISTRY,
    REGISTRY_KIND,
    LedgerEntry,
    entry,
    item_ledger_findings,
    ledger_kind,
    registry_against,
    shard_of,
)
from ..core.policy import Policy
from ..core.records import Actor, Event, Item
from ..core.registry import (
    POLICY,
    TOKEN_ISSUE,
    TOKEN_REVOKE,
    PolicyRecord,
    Registry,
    RegistryEvent,
    Token,
    actor_state,
    compare,
    event_hash,
    fold,
)
from ..core.states import State
from .errors import SchemaMismatch, StoreError
from .insights import SQLInsights
from .outbox import SQLOutbox
from .queries import load, migrations

Row = Mapping[str, Any]
INTEGRITY_MIGRATION = 4  # 0004_integrity: the ledger and seals (see _record_legacy)


class SQLStore(ABC):
    """Everything but the driver: queries come from ``sql/<dialect>/queries.sql``."""

    dialect: str = ""
    pyformat: bool = False
    integrity_errors: tuple[type[BaseException], ...] = ()

    def __init__(self, url: str) -> None:
        self.url = url
        self.q = load(self.dialect, self.pyformat)
        self._migrations = migrations(self.dialect)
        self.insights = SQLInsights(self)  # the ports beside the items-and-events protocol
        self.outbox = SQLOutbox(self)

    # --- what a dialect provides ---------------------------------------------------------

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def _write(self) -> AbstractContextManager[Any]:
        """A cursor inside one write transaction (committed on exit, rolled back on error)."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Any]:
        """A cursor for reads."""

    @abstractmethod
    def _apply_migration(self, version: int, name: str, sql: str) -> bool:
        """Apply one migration unless already applied (under the dialect's lock)."""

    @abstractmethod
    def schema_version(self) -> int: ...

    def _time(self, value: datetime | None) -> Any:
        return None if value is None else format_time(value)

    def _json(self, value: Any) -> Any:
        return storage_json(value)

    @staticmethod
    def _from_time(value: Any) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, datetime):
            return value
        return parse_time(str(value))

    @staticmethod
    def _from_json(value: Any) -> Any:
        return json.loads(value) if isinstance(value, str | bytes) else value

    @staticmethod
    def _from_json_frozen(value: Any) -> Any:
        return load_frozen(value) if isinstance(value, str | bytes) else freeze(value)

    @staticmethod
    def _rowcount(cur: Any) -> int:
        return int(cur.rowcount)

    # --- schema -----------------------------------------------------------------------------

    @property
    def known_version(self) -> int:
        return self._migrations[-1][0]

    def migrate(self) -> list[int]:
        applied = []
        for version, name, sql in self._migrations:
            if self._apply_migration(version, name, sql):
                applied.append(version)
        return applied

    def _after_migration(self, version: int, cur: Any) -> None:
        """Data steps of a migration, run in its transaction (under its lock)."""
        if version == INTEGRITY_MIGRATION:
            self._record_legacy(cur)

    def _record_legacy(self, cur: Any) -> None:
        """Upgrading a database from before the ledger and seals: record what is there now, as
        found, so that from here on every change to it is seen. Ledger entries are appended for
        every item's creation and its people's events (grouped by item), a seal for each item
        whose last event carries none, and a registry event for each token and policy."""
        now = datetime.now(UTC)
        cur.execute(self.q["list_actor_events"], {})
        for position, row in enumerate(cur.fetchall(), start=1):
            at = self._from_time(row["at"]) or now
            self._append_ledger(cur, REGISTRY_KIND, REGISTRY, position, row["hash"], at)
        cur.execute(self.q["all_items"], {})
        items = [self._item(r) for r in cur.fetchall()]
        for item in sorted(items, key=lambda i: (i.created_at, i.id)):
            cur.execute(self.q["history"], {"id": item.id})
            events = [self._event(r) for r in cur.fetchall()]
            for event in events:
                kind = ledger_kind(event)
                if kind is not None:
                    self._ledger_event(cur, kind, event)
            if events and "seal" not in events[-1].digests:
                cur.execute(
                    self.q["insert_legacy_seal"],
                    {
                        "item_id": item.id,
                        "head": events[-1].hash,
                        "seal": item_seal(item),
                        "at": self._time(now),
                    },
                )
        cur.execute(self.q["list_tokens"], {})
        for row in cur.fetchall():
            self._append_registry(
                cur, row["actor"], TOKEN_ISSUE, {"token": row["hash"], "upgrade": True}, now
            )
            if row["revoked_at"] is not None:
                detail = {"tokens": [row["hash"]], "upgrade": True}
                self._append_registry(cur, row["actor"], TOKEN_REVOKE, detail, now)
        cur.execute(self.q["list_automations"], {})
        for row in cur.fetchall():
            detail = {
                "version": row["version"],
                "policy": self._from_json(row["policy"]),
                "upgrade": True,
            }
            self._append_registry(cur, f"automation:{row['name']}", POLICY, detail, now)

    def check_schema(self) -> None:
        found = self.schema_version()
        if found != self.known_version:
            raise SchemaMismatch(
                f"database schema is version {found}, this stopline knows {self.known_version}"
                + (
                    "; run `stopline migrate`"
                    if found < self.known_version
                    else "; upgrade stopline"
                )
            )

    # --- conversions ----------------------------------------------------------------------

    def _item(self, row: Row) -> Item:
        created = self._from_time(row["created_at"])
        updated = self._from_time(row["updated_at"])
        eligible = self._from_time(row["next_eligible_at"])
        assert created and updated and eligible
        return Item(
            id=row["id"],
            automation=row["automation"],
            key=row["key"],
            state=State(row["state"]),
            version=int(row["version"]),
            seq=int(row["seq"]),
            head=row["head"],
            created_at=created,
            updated_at=updated,
            attempts=int(row["attempts"]),
            max_attempts=int(row["max_attempts"]),
            next_eligible_at=eligible,
            lease_owner=row["lease_owner"],
            lease_token=int(row["lease_token"]),
            lease_expires_at=self._from_time(row["lease_expires_at"]),
            claimed_at=self._from_time(row["claimed_at"]),
            attempt_log=tuple(self._from_json_frozen(row["attempt_log"])),
            data=self._from_json_frozen(row["data"]),
        )

    def _item_params(self, item: Item) -> dict[str, Any]:
        return {
            "id": item.id,
            "automation": item.automation,
            "key": item.key,
            "state": item.state.value,
            "state_class": item.state.state_class.value,
            "version": item.version,
            "seq": item.seq,
            "head": item.head,
            "created_at": self._time(item.created_at),
            "updated_at": self._time(item.updated_at),
            "attempts": item.attempts,
            "max_attempts": item.max_attempts,
            "next_eligible_at": self._time(item.next_eligible_at),
            "lease_owner": item.lease_owner,
            "lease_token": item.lease_token,
            "lease_expires_at": self._time(item.lease_expires_at),
            "claimed_at": self._time(item.claimed_at),
            "attempt_log": self._json(list(item.attempt_log)),
            "data": self._json(item.data),
        }

    def _event(self, row: Row) -> Event:
        at = self._from_time(row["at"])
        assert at is not None
        return Event(
            item_id=row["item_id"],
            seq=int(row["seq"]),
            at=at,
            command=row["command"],
            actor=row["actor"],
            from_state=None if row["from_state"] is None else State(row["from_state"]),
            to_state=State(row["to_state"]),
            reasons=tuple(self._from_json(row["reasons"])),
            digests=freeze(self._from_json(row["digests"])),
            detail=freeze(self._from_json(row["detail"])),
            prev_hash=row["prev_hash"],
            hash=row["hash"],
        )

    def _event_params(self, event: Event) -> dict[str, Any]:
        return {
            "item_id": event.item_id,
            "seq": event.seq,
            "at": self._time(event.at),
            "command": event.command,
            "actor": event.actor,
            "from_state": None if event.from_state is None else event.from_state.value,
            "to_state": event.to_state.value,
            "reasons": self._json(list(event.reasons)),
            "digests": self._json(event.digests),
            "detail": self._json(event.detail),
            "prev_hash": event.prev_hash,
            "hash": event.hash,
        }

    def _automations_param(self, automations: Sequence[str] | None) -> Any:
        return None if automations is None else json.dumps(list(automations))

    # --- automations --------------------------------------------------------------------------

    def register_automation(self, name: str, policy: Policy, now: datetime) -> None:
        """Store an automation's policy; a new or changed one is a registry event."""
        plain = policy.to_plain()
        with self._write() as cur:
            cur.execute(self.q["lock_registry"], {})
            cur.execute(
                self.q["upsert_automation"],
                {
                    "name": name,
                    "policy": self._json(plain),
                    "version": policy.version,
                    "updated_at": self._time(now),
                },
            )
            if self._rowcount(cur) == 1:
                detail = {"version": policy.version, "policy": plain}
                self._append_registry(cur, f"automation:{name}", POLICY, detail, now)

    def policy(self, name: str) -> Policy | None:
        with self._read() as cur:
            cur.execute(self.q["get_automation"], {"name": name})
            row = cur.fetchone()
        return None if row is None else Policy.from_plain(self._from_json(row["policy"]))

    # --- items ----------------------------------------------------------------------------------

    def get(self, item_id: str) -> Item | None:
        with self._read() as cur:
            cur.execute(self.q["get_item"], {"id": item_id})
            row = cur.fetchone()
        return None if row is None else self._item(row)

    def find(self, automation: str, key: str) -> Item | None:
        with self._read() as cur:
            cur.execute(self.q["find_item"], {"automation": automation, "key": key})
            row = cur.fetchone()
        return None if row is None else self._item(row)

    def list_items(
        self,
        *,
        state: str | None = None,
        automation: str | None = None,
        state_class: str | None = None,
        limit: int = 1000,
    ) -> list[Item]:
        params = {"state": state, "automation": automation, "state_class": state_class}
        with self._read() as cur:
            cur.execute(self.q["list_items"], {**params, "limit": limit})
            return [self._item(r) for r in cur.fetchall()]

    def count_by_state(self) -> list[dict[str, Any]]:
        with self._read() as cur:
            cur.execute(self.q["count_by_state"], {})
            return [
                {"state": r["state"], "count": int(r["n"]), "oldest": self._from_time(r["oldest"])}
                for r in cur.fetchall()
            ]

    def history(self, item_id: str) -> list[Event]:
        with self._read() as cur:
            cur.execute(self.q["history"], {"id": item_id})
            return [self._event(r) for r in cur.fetchall()]

    def head(self, item_id: str) -> tuple[Event | None, str | None]:
        """The item's last event by sequence, and the seal an upgrade recorded for it."""
        with self._read() as cur:
            cur.execute(self.q["head_event"], {"id": item_id})
            row = cur.fetchone()
        if row is None:
            return None, None
        return self._event(row), row["legacy_seal"]

    def iter_items_with_events(self) -> Iterator[tuple[Item, list[Event]]]:
        with self._read() as cur:
            cur.execute(self.q["all_items"], {})
            items = [self._item(r) for r in cur.fetchall()]
        for item in items:
            yield item, self.history(item.id)

    def insert(self, decision: Decision) -> bool:
        assert decision.after is not None and decision.event is not None
        with self._write() as cur:
            cur.execute(self.q["lock_ledger"], {"shard": shard_of(decision.after.id)})
            cur.execute(self.q["insert_item"], self._item_params(decision.after))
            if self._rowcount(cur) != 1:
                return False
            cur.execute(self.q["insert_event"], self._event_params(decision.event))
            self._ledger_event(cur, CREATE, decision.event)
        return True

    def _append_ledger(
        self, cur: Any, kind: str, item_id: str, seq: int, event_hash: str, at: datetime
    ) -> None:
        """Append one ledger entry to the item's shard (the caller holds that shard's lock)."""
        shard = shard_of(item_id)
        cur.execute(self.q["last_ledger"], {"shard": shard})
        row = cur.fetchone()
        n = 1 if row is None else int(row["n"]) + 1
        prev = "" if row is None else str(row["hash"])
        e = entry(shard, n, at, kind, item_id, seq, event_hash, prev)
        cur.execute(
            self.q["insert_ledger"],
            {
                "shard": e.shard,
                "n": e.n,
                "at": self._time(e.at),
                "kind": e.kind,
                "item_id": e.item_id,
                "seq": e.seq,
                "event_hash": e.event_hash,
                "prev_hash": e.prev_hash,
                "hash": e.hash,
            },
        )

    def _ledger_event(self, cur: Any, kind: str, event: Event) -> None:
        self._append_ledger(cur, kind, event.item_id, event.seq, event.hash, event.at)

    def apply(
        self,
        decision: Decision,
        *,
        idempotency: tuple[str, str, str] | None = None,
    ) -> bool:
        # Everything is encoded before the transaction starts: the write lock is held only
        # for the statements themselves.
        params = self._apply_params(decision)
        assert decision.event is not None
        kind = ledger_kind(decision.event)
        try:
            with self._write() as cur:
                if kind is not None:
                    cur.execute(self.q["lock_ledger"], {"shard": shard_of(params["id"])})
                cur.execute(self.q["update_item"], params)
                if self._rowcount(cur) != 1:
                    raise _Stale()
                cur.execute(self.q["insert_event"], params)
                if idempotency is not None:
                    self._insert_idempotency(cur, idempotency, params["id"], params["at"])
                if kind is not None:
                    self._ledger_event(cur, kind, decision.event)
        except _Stale:
            return False
        except self.integrity_errors:
            return False  # a concurrent write took the same idempotency key first
        return True

    def apply_many(self, decisions: Sequence[Decision]) -> list[bool]:
        """Write several applied decisions (of different items) in ONE transaction, each
        guarded by its own compare-and-set: ``True`` for each written, ``False`` for each whose
        item moved on first (that item only; the others still commit). A decision that appends
        to the ledger, or a batch a statement fails in, is written one decision at a time."""
        results: list[bool | None] = [None] * len(decisions)
        grouped: list[tuple[int, dict[str, Any]]] = []
        for n, decision in enumerate(decisions):
            assert decision.event is not None
            if ledger_kind(decision.event) is not None:
                results[n] = self.apply(decision)
            else:
                grouped.append((n, self._apply_params(decision)))
        if grouped:
            try:
                written = self._apply_grouped([params for _, params in grouped])
            except self.integrity_errors:  # rolled back whole: one at a time, each on its own
                written = [self.apply(decisions[n]) for n, _ in grouped]
            for (n, _), ok in zip(grouped, written, strict=True):
                results[n] = ok
        return [bool(ok) for ok in results]

    def _apply_grouped(self, rows: Sequence[dict[str, Any]]) -> list[bool]:
        """One transaction: per row, the compare-and-set update and, when it took, the event."""
        written = []
        with self._write() as cur:
            for params in rows:
                cur.execute(self.q["update_item"], params)
                if self._rowcount(cur) != 1:
                    written.append(False)
                    continue
                cur.execute(self.q["insert_event"], params)
                written.append(True)
        return written

    def _apply_params(self, decision: Decision) -> dict[str, Any]:
        """The parameters of an applied decision: the new item, its event, the version guard."""
        before, after, event = decision.before, decision.after, decision.event
        if before is None or after is None or event is None:
            raise StoreError("only an applied decision about an existing item can be written")
        return {
            **self._item_params(after),
            **self._event_params(event),
            "expected_version": before.version,
        }

    def _insert_idempotency(
        self, cur: Any, idempotency: tuple[str, str, str], item_id: str | None, at: Any
    ) -> None:
        """``at`` is already encoded for the driver."""
        key, command_digest, decision_json = idempotency
        cur.execute(
            self.q["insert_idempotency"],
            {
                "key": key,
                "command_digest": command_digest,
                "item_id": item_id,
                "decision": decision_json,
                "at": at,
            },
        )

    # --- leases ----------------------------------------------------------------------------

    def claim(
        self,
        worker: str,
        now: datetime,
        lease_seconds: float,
        automations: Sequence[str] | None = None,
        *,
        leases: Mapping[str, float] | None = None,
    ) -> Item | None:
        params = self._claim_params(worker, now, lease_seconds, automations)
        params["leases"] = self._leases_param(now, leases)
        with self._claiming() as cur:
            cur.execute(self.q["claim"], params)
            row = cur.fetchone()
        return None if row is None else self._item(row)

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
        """Up to ``limit`` claims in one statement, the most overdue first: each as
        :meth:`claim` would take it (its attempt counted, its own new fencing token)."""
        params = self._claim_params(worker, now, lease_seconds, automations)
        params["leases"] = self._leases_param(now, leases)
        params["limit"] = max(1, int(limit))
        with self._claiming() as cur:
            cur.execute(self.q["claim_batch"], params)
            items = [self._item(row) for row in cur.fetchall()]
        return sorted(items, key=lambda item: (item.next_eligible_at, item.id))

    def _leases_param(self, now: datetime, leases: Mapping[str, float] | None) -> str | None:
        if leases is None:
            return None
        # each automation's own lease, by the time it ends
        ends = {name: format_time(now + timedelta(seconds=s)) for name, s in leases.items()}
        return json.dumps(ends)

    def _claiming(self) -> AbstractContextManager[Any]:
        """Where the claim statement runs: a write transaction unless a dialect knows better."""
        return self._write()

    def _claim_params(
        self, worker: str, now: datetime, lease_seconds: float, automations: Sequence[str] | None
    ) -> dict[str, Any]:
        return {
            "worker": worker,
            "now": self._time(now),
            "expires_at": self._time(now + timedelta(seconds=lease_seconds)),
            "automations": self._automations_param(automations),
        }

    def renew(self, item: Item, now: datetime, lease_seconds: float) -> bool:
        params = {
            "id": item.id,
            "worker": item.lease_owner,
            "token": item.lease_token,
            "now": self._time(now),
            "expires_at": self._time(now + timedelta(seconds=lease_seconds)),
        }
        with self._write() as cur:
            cur.execute(self.q["renew"], params)
            return self._rowcount(cur) == 1

    def sweepable(self, now: datetime, limit: int = 100) -> list[Item]:
        with self._read() as cur:
            cur.execute(self.q["sweepable"], {"now": self._time(now), "limit": limit})
            return [self._item(r) for r in cur.fetchall()]

    def next_due(self, automations: Sequence[str] | None = None) -> datetime | None:
        with self._read() as cur:
            cur.execute(self.q["next_due"], {"automations": self._automations_param(automations)})
            row = cur.fetchone()
        return None if row is None else self._from_time(row["at"])

    def wait_for_work(self, timeout: float) -> None:
        """Block until new work may be due or ``timeout`` seconds pass (polling by default)."""
        time.sleep(max(0.0, timeout))

    # --- actors ----------------------------------------------------------------------------------

    def _actor(self, row: Row) -> Actor:
        return Actor(row["name"], frozenset(self._from_json(row["roles"])), bool(row["active"]))

    def actors(self) -> dict[str, Actor]:
        with self._read() as cur:
            cur.execute(self.q["list_actors"], {})
            return {r["name"]: self._actor(r) for r in cur.fetchall()}

    def set_actor(self, actor: Actor, change: str, detail: dict[str, Any], now: datetime) -> None:
        """Create or change an actor; the registry event records the actor it leaves."""
        with self._write() as cur:
            cur.execute(self.q["lock_registry"], {})
            cur.execute(
                self.q["upsert_actor"],
                {
                    "name": actor.name,
                    "roles": self._json(sorted(actor.roles)),
                    "active": actor.active,
                    "at": self._time(now),
                },
            )
            full = {**detail, "state": actor_state(actor)}
            self._append_registry(cur, actor.name, change, full, now)

    def _append_registry(
        self, cur: Any, subject: str, change: str, detail: dict[str, Any], now: datetime
    ) -> None:
        """Append one registry event (the caller holds the registry lock)."""
        cur.execute(self.q["last_actor_event"], {})
        row = cur.fetchone()
        prev = "" if row is None else row["hash"]
        hashed = event_hash(now, subject, change, detail, prev)
        cur.execute(
            self.q["insert_actor_event"],
            {
                "at": self._time(now),
                "actor": subject,
                "change": change,
                "detail": self._json(detail),
                "prev_hash": prev,
                "hash": hashed,
            },
        )
        self._ledger_registry(cur, hashed, now)

    def _ledger_registry(self, cur: Any, event_hash_: str, at: datetime) -> None:
        """Record the registry event just appended (its position in the chain) in the ledger."""
        cur.execute(self.q["count_actor_events"], {})
        position = int(cur.fetchone()["n"])
        cur.execute(self.q["lock_ledger"], {"shard": shard_of(REGISTRY)})
        self._append_ledger(cur, REGISTRY_KIND, REGISTRY, position, event_hash_, at)

    def append_registry(
        self, subject: str, change: str, detail: Mapping[str, Any], now: datetime
    ) -> None:
        """Append one registry event that changes no table (a signed certificate or
        revocation: signed mode reads them from the chain)."""
        with self._write() as cur:
            cur.execute(self.q["lock_registry"], {})
            self._append_registry(cur, subject, change, dict(detail), now)

    def actor_events(self) -> list[dict[str, Any]]:
        with self._read() as cur:
            cur.execute(self.q["list_actor_events"], {})
            return [
                {
                    "at": self._from_time(r["at"]),
                    "actor": r["actor"],
                    "change": r["change"],
                    "detail": self._from_json(r["detail"]),
                    "prev_hash": r["prev_hash"],
                    "hash": r["hash"],
                }
                for r in cur.fetchall()
            ]

    def registry(self) -> Registry:
        """The registry as its chain records it, with every place a table differs from it."""
        with self._read() as cur:
            cur.execute(self.q["list_actor_events"], {})
            events = [
                RegistryEvent(
                    n,
                    self._from_time(r["at"]) or datetime.min,
                    r["actor"],
                    r["change"],
                    freeze(self._from_json(r["detail"])),
                    r["prev_hash"],
                    r["hash"],
                )
                for n, r in enumerate(cur.fetchall(), start=1)
            ]
            cur.execute(self.q["list_actors"], {})
            actors = {r["name"]: self._actor(r) for r in cur.fetchall()}
            cur.execute(self.q["list_tokens"], {})
            tokens = {
                r["hash"]: Token(r["actor"], r["revoked_at"] is not None) for r in cur.fetchall()
            }
            cur.execute(self.q["list_automations"], {})
            policies = {
                r["name"]: PolicyRecord(r["version"], self._from_json(r["policy"]))
                for r in cur.fetchall()
            }
        found = fold(events)
        found.findings += compare(found, actors, tokens, policies)
        # the chain against the ledger: a registry cut back (a revocation dropped) is seen
        recorded = self.item_ledger(REGISTRY)
        found.findings += registry_against([e.hash for e in events], [e for e, _ in recorded])
        found.findings += [
            f for f in item_ledger_findings(REGISTRY, [], recorded) if f.kind == "ledger"
        ]
        return found

    def add_token(
        self,
        actor: str,
        token_hash: str,
        now: datetime,
        signed: Mapping[str, Any] | None = None,
    ) -> None:
        """Store a token's hash; its issue is a registry event (with the actor's signed record
        of it, in signed mode)."""
        detail: dict[str, Any] = {"token": token_hash}
        if signed is not None:
            detail["signed"] = dict(signed)
        with self._write() as cur:
            cur.execute(self.q["lock_registry"], {})
            cur.execute(
                self.q["insert_token"], {"hash": token_hash, "actor": actor, "at": self._time(now)}
            )
            self._append_registry(cur, actor, TOKEN_ISSUE, detail, now)

    def token_actor(self, token_hash: str) -> str | None:
        with self._read() as cur:
            cur.execute(self.q["token_actor"], {"hash": token_hash})
            row = cur.fetchone()
        return None if row is None else str(row["actor"])

    def revoke_tokens(self, actor: str, now: datetime) -> None:
        with self._write() as cur:
            cur.execute(self.q["lock_registry"], {})
            cur.execute(self.q["live_tokens_of"], {"actor": actor})
            hashes = [str(r["hash"]) for r in cur.fetchall()]
            if not hashes:
                return
            cur.execute(self.q["revoke_tokens"], {"actor": actor, "at": self._time(now)})
            self._append_registry(cur, actor, TOKEN_REVOKE, {"tokens": hashes}, now)

    # --- what verify reads ---------------------------------------------------------------------

    def ledger(self) -> list[LedgerEntry]:
        with self._read() as cur:
            cur.execute(self.q["list_ledger"], {})
            return [self._ledger_entry(r) for r in cur.fetchall()]

    def _ledger_entry(self, row: Row) -> LedgerEntry:
        return LedgerEntry(
            int(row["shard"]),
            int(row["n"]),
            self._from_time(row["at"]) or datetime.min,
            row["kind"],
            row["item_id"],
            int(row["seq"]),
            row["event_hash"],
            row["prev_hash"],
            row["hash"],
        )

    def item_ledger(self, item_id: str) -> list[tuple[LedgerEntry, str | None]]:
        """The item's ledger entries, each with the stored hash of the entry before it in its
        shard (``None`` for none)."""
        with self._read() as cur:
            cur.execute(self.q["item_ledger"], {"id": item_id})
            return [(self._ledger_entry(r), r["before_hash"]) for r in cur.fetchall()]

    def idempotency_records(self) -> list[dict[str, Any]]:
        with self._read() as cur:
            cur.execute(self.q["list_idempotency"], {})
            return [dict(r) for r in cur.fetchall()]

    def legacy_seals(self) -> dict[str, tuple[str, str]]:
        """item id -> (head event hash, seal) recorded by the upgrade to seals."""
        with self._read() as cur:
            cur.execute(self.q["list_legacy_seals"], {})
            return {r["item_id"]: (r["head"], r["seal"]) for r in cur.fetchall()}

    def item_classes(self) -> list[tuple[str, str, str]]:
        """(id, state, state class column) of every item, as stored."""
        with self._read() as cur:
            cur.execute(self.q["item_classes"], {})
            return [(r["id"], r["state"], r["state_class"]) for r in cur.fetchall()]

    # --- idempotency, audit, schedules ------------------------------------------------------

    def idempotency(self, key: str) -> tuple[str, str] | None:
        with self._read() as cur:
            cur.execute(self.q["get_idempotency"], {"key": key})
            row = cur.fetchone()
        return None if row is None else (row["command_digest"], row["decision"])

    def record_refusal(
        self, decision: Decision, command: str, actor: str | None, now: datetime
    ) -> None:
        """Count the refusal in its row: one row per (item, command, actor, reason codes).

        A refusal about no stored item (``unknown_item``, a reused idempotency key naming
        nothing) keeps no item id: the reference is whatever the client sent, and keeping it
        would give every guess a row of its own."""
        item_id = decision.item_id if decision.before is not None else None
        reasons = list(decision.reasons)
        key = [item_id, command, actor, reasons]
        group_key = hashlib.sha256(
            json.dumps(key, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        ).hexdigest()
        with self._write() as cur:
            cur.execute(
                self.q["record_refusal"],
                {
                    "group_key": group_key,
                    "at": self._time(now),
                    "item_id": item_id,
                    "command": command,
                    "actor": actor,
                    "reasons": self._json(reasons),
                },
            )

    def last_discovery(self, automation: str) -> datetime | None:
        with self._read() as cur:
            cur.execute(self.q["get_schedule"], {"automation": automation})
            row = cur.fetchone()
        return None if row is None else self._from_time(row["last_run_at"])

    def set_last_discovery(self, automation: str, at: datetime) -> None:
        with self._write() as cur:
            cur.execute(self.q["set_schedule"], {"automation": automation, "at": self._time(at)})


class _Stale(Exception):
    """Raised inside a write transaction to roll it back when a compare-and-set loses."""
