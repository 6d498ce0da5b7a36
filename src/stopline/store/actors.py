"""Actors, tokens and automations' policies: each change is a registry event written in the
same transaction, and :meth:`SQLActors.registry` folds the chain and compares the tables."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from ..core.frozen import freeze
from ..core.ledger import REGISTRY, item_ledger_findings, registry_against
from ..core.policy import Policy
from ..core.records import Actor
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
    fold,
)
from .chains import SQLChains

# what the registry is folded from, in the order :meth:`SQLActors._fold_registry` takes it
REGISTRY_QUERIES = (
    "list_actor_events",
    "list_actors",
    "list_tokens",
    "list_automations",
    "item_ledger",
)


# the parameters of registry_text (its ledger part names the registry as ``id`` on SQLite,
# as ``registry`` on PostgreSQL, where it shares a statement with an item's reads)
REGISTRY_PARAMS = {"id": REGISTRY, "registry": REGISTRY}
# its columns, in order (the text of the rows last folded is the key of that fold)
REGISTRY_TEXT_COLUMNS = ("actor_events", "actors", "tokens", "automations", "ledger")
# seconds a fold is trusted on its stamp alone (registry_stamp); then its rows are read whole
STAMP_TRUST = 60.0


class _Fold(NamedTuple):
    """The registry folded last: the key of the rows it was folded from (their text), what
    they folded to, their stamp where the dialect has one, and when the rows were read
    whole (``time.monotonic``)."""

    key: Any
    registry: Registry
    stamp: str | None
    read_at: float

    def stamp_trusted(self) -> bool:
        """Whether the stamp may still stand for the rows alone (``STAMP_TRUST``)."""
        return self.stamp is not None and time.monotonic() - self.read_at <= STAMP_TRUST


class SQLActors(SQLChains):
    """The registry's tables and their chain."""

    # the rows last folded and what they folded to: see :meth:`registry`
    _registry_cache: _Fold | None = None

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
        """The registry as its chain records it, with every place a table differs from it.

        The fold itself is skipped when the rows are exactly the ones folded last time, so any
        edit, insertion or deletion is folded and compared again at once. Whether they are is
        read in one statement first: on PostgreSQL the rows' stamp (``registry_stamp``: their
        row versions, which no statement can set back), elsewhere their text
        (``registry_text``); the rows themselves only when that differs, and on PostgreSQL
        also once the fold has been trusted on its stamp for ``STAMP_TRUST`` seconds."""
        check = self._registry_check()
        if check is not None:
            with self._read() as cur:
                cur.execute(*check)
                unchanged = self._registry_if_unchanged(cur.fetchall())
            if unchanged is not None:
                return unchanged
        return self._read_registry()

    def _read_registry(self) -> Registry:
        """Every row the fold reads, their text and (where the dialect has one) their stamp,
        in one snapshot; folded unless the text is that of the rows folded last."""
        cached = self._registry_cache
        statements = [
            (self.q[name], {"id": REGISTRY} if name == "item_ledger" else {})
            for name in REGISTRY_QUERIES
        ]
        statements.append((self.q["registry_text"], REGISTRY_PARAMS))
        stamp_query = self.q.get("registry_stamp")
        if stamp_query is not None:
            statements.append((stamp_query, REGISTRY_PARAMS))
        found = self._read_all(statements)
        rows = [[dict(r) for r in each] for each in found[: len(REGISTRY_QUERIES)]]
        key = _text_key(found[len(REGISTRY_QUERIES)][0])
        stamp = None if stamp_query is None else found[-1][0]["registry_stamp"]
        if cached is not None and cached.key == key:
            registry = cached.registry
        else:
            registry = self._fold_registry(*rows)
        self._registry_cache = _Fold(key, registry, stamp, time.monotonic())
        return registry.copy()

    def _registry_check(self) -> tuple[str, dict[str, Any]] | None:
        """The one statement that tells whether the registry's rows are those folded last
        (``None``: nothing was folded yet, or the fold's stamp is no longer trusted alone;
        read it whole)."""
        cached = self._registry_cache
        if cached is None:
            return None
        if cached.stamp is None:
            return self.q["registry_text"], REGISTRY_PARAMS
        return (self.q["registry_stamp"], REGISTRY_PARAMS) if cached.stamp_trusted() else None

    def _registry_if_unchanged(self, rows: Sequence[Any]) -> Registry | None:
        """The registry folded last, if ``rows`` (what :meth:`_registry_check` read, or a
        statement that read the same column beside others) say its rows are still exactly
        those; else ``None``: read it whole (:meth:`registry`)."""
        cached = self._registry_cache
        if cached is None or not rows:
            return None
        if cached.stamp is not None:
            if cached.stamp_trusted() and rows[0].get("registry_stamp") == cached.stamp:
                return cached.registry.copy()
            return None
        if _text_key(rows[0]) == cached.key:
            return cached.registry.copy()
        return None

    def _fold_registry(
        self,
        event_rows: list[dict[str, Any]],
        actor_rows: list[dict[str, Any]],
        token_rows: list[dict[str, Any]],
        policy_rows: list[dict[str, Any]],
        ledger_rows: list[dict[str, Any]],
    ) -> Registry:
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
            for n, r in enumerate(event_rows, start=1)
        ]
        actors = {r["name"]: self._actor(r) for r in actor_rows}
        tokens = {r["hash"]: Token(r["actor"], r["revoked_at"] is not None) for r in token_rows}
        policies = {
            r["name"]: PolicyRecord(r["version"], self._from_json(r["policy"])) for r in policy_rows
        }
        found = fold(events)
        found.findings += compare(found, actors, tokens, policies)
        # the chain against the ledger: a registry cut back (a revocation dropped) is seen
        recorded = [(self._ledger_entry(r), r["before_hash"]) for r in ledger_rows]
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


def _text_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """The cache key of the rows a ``registry_text`` row is the text of (whatever else the
    statement that read it returned beside it): the text itself, compared whole."""
    return tuple(row[name] for name in REGISTRY_TEXT_COLUMNS)
