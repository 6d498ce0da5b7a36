"""The registry chain: actors, their roles, their API tokens and each automation's policy.

Every change is one hash-chained registry event (``actor_events``): an actor added, revoked or
stripped of a role, a token issued or revoked, a policy registered. The tables ``actors``,
``tokens`` and ``automations`` are caches of that chain. :func:`fold` replays the chain into
the registry it describes; :func:`compare` lists where a table says something the chain never
recorded. Decisions use the folded registry, never a table alone: a role written into the
``actors`` table without an event grants nothing, and is reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .canonical import CanonicalError, digest
from .integrity import Finding
from .legacy_form import legacy_digest
from .records import Actor

AUTOMATION_PREFIX = "automation:"

# changes
ADD = "add"
REVOKE = "revoke"
REVOKE_ROLE = "revoke_role"
TOKEN_ISSUE = "token_issue"
TOKEN_REVOKE = "token_revoke"
POLICY = "policy"
CERTIFY = "certify"
REVOKE_KEY = "revoke_key"
SIGNED = (CERTIFY, REVOKE_KEY)

CHAIN_BROKEN = "chain_broken"
REGISTRY_MISMATCH = "registry_mismatch"
TOKEN_UNRECORDED = "token_unrecorded"
POLICY_MISMATCH = "policy_mismatch"


@dataclass(frozen=True)
class RegistryEvent:
    n: int
    at: datetime
    actor: str  # the subject: an actor name, or ``automation:NAME`` for a policy
    change: str
    detail: Mapping[str, Any]
    prev_hash: str
    hash: str

    def body(self) -> dict[str, Any]:
        return {"at": self.at, "actor": self.actor, "change": self.change, "detail": self.detail}


def event_hash(at: datetime, actor: str, change: str, detail: Any, prev_hash: str) -> str:
    return digest(
        {"at": at, "actor": actor, "change": change, "detail": detail, "prev_hash": prev_hash}
    )


def _hash_ok(event: RegistryEvent) -> bool:
    body = {**event.body(), "prev_hash": event.prev_hash}
    try:
        return event.hash in (digest(body), legacy_digest(body))
    except (CanonicalError, TypeError, ValueError):
        return False


@dataclass(frozen=True)
class Token:
    actor: str
    revoked: bool = False


@dataclass(frozen=True)
class PolicyRecord:
    version: str
    policy: Mapping[str, Any]


@dataclass
class Registry:
    """What the chain says, and what was found wrong with it (or with the tables)."""

    actors: dict[str, Actor] = field(default_factory=dict)
    tokens: dict[str, Token] = field(default_factory=dict)
    policies: dict[str, PolicyRecord] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    head: str = ""
    length: int = 0
    # (change, detail) of the events that carry a signed document (signed mode reads them)
    signed: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def copy(self) -> Registry:
        """A copy whose collections the caller may change (the records in them are frozen)."""
        return Registry(
            dict(self.actors),
            dict(self.tokens),
            dict(self.policies),
            list(self.findings),
            self.head,
            self.length,
            list(self.signed),
        )


def actor_state(actor: Actor) -> dict[str, Any]:
    """What an actor event records of the actor it leaves behind."""
    return {"roles": sorted(actor.roles), "active": actor.active}


def _apply(registry: Registry, event: RegistryEvent) -> None:
    detail = event.detail
    change = event.change
    name = event.actor
    if change == POLICY:
        automation = name.removeprefix(AUTOMATION_PREFIX)
        registry.policies[automation] = PolicyRecord(str(detail["version"]), detail["policy"])
        return
    if change in SIGNED:
        registry.signed.append((change, detail))
        return
    if change == TOKEN_ISSUE:
        registry.tokens[str(detail["token"])] = Token(name)
        if "signed" in detail:
            registry.signed.append((change, detail))
        return
    if change == TOKEN_REVOKE:
        for token in detail.get("tokens", ()):
            if token in registry.tokens:
                registry.tokens[token] = Token(registry.tokens[token].actor, revoked=True)
        return
    state = detail.get("state")
    previous = registry.actors.get(name)
    if state is not None:  # events written since the registry records the resulting state
        registry.actors[name] = Actor(name, frozenset(state["roles"]), bool(state["active"]))
    elif change == ADD:  # older events: replay the rules that wrote them
        kept = previous.roles if previous is not None and previous.active else frozenset()
        registry.actors[name] = Actor(name, kept | frozenset(detail.get("roles", ())), True)
    elif change == REVOKE and previous is not None:
        registry.actors[name] = Actor(name, previous.roles, False)
    elif change == REVOKE_ROLE and previous is not None:
        registry.actors[name] = Actor(name, previous.roles - {detail.get("role")}, previous.active)


def fold(events: Sequence[RegistryEvent]) -> Registry:
    """Replay the chain. A broken link or an altered event is a finding; the events after it
    are still replayed, so every later finding is seen too."""
    registry = Registry()
    prev = ""
    for event in events:
        ref = f"{event.n} ({event.actor} {event.change})"
        if event.prev_hash != prev:
            registry.findings.append(
                Finding("registry", ref, "prev_hash", CHAIN_BROKEN, "an event before it is gone")
            )
        if not _hash_ok(event):
            registry.findings.append(
                Finding("registry", ref, "hash", CHAIN_BROKEN, "the event was altered")
            )
        try:
            _apply(registry, event)
        except (KeyError, TypeError, ValueError) as exc:
            registry.findings.append(
                Finding("registry", ref, "detail", CHAIN_BROKEN, f"malformed: {exc}")
            )
        prev = event.hash
    registry.head = prev
    registry.length = len(events)
    return registry


def compare(
    registry: Registry,
    actors: Mapping[str, Actor],
    tokens: Mapping[str, Token],
    policies: Mapping[str, PolicyRecord] | None = None,
) -> list[Finding]:
    """Where the tables differ from the chain (each difference is a change nobody recorded)."""
    found: list[Finding] = []
    for name in sorted(set(actors) | set(registry.actors)):
        table, chain = actors.get(name), registry.actors.get(name)
        if table is None:
            found.append(
                Finding("actor", name, "row", REGISTRY_MISMATCH, "recorded, but deleted from table")
            )
        elif chain is None:
            found.append(Finding("actor", name, "row", REGISTRY_MISMATCH, "never recorded"))
        elif table.roles != chain.roles or table.active != chain.active:
            found.append(
                Finding(
                    "actor",
                    name,
                    "roles" if table.roles != chain.roles else "active",
                    REGISTRY_MISMATCH,
                    f"table says {sorted(table.roles)} active={table.active}, the registry "
                    f"recorded {sorted(chain.roles)} active={chain.active}",
                )
            )
    for token_hash in sorted(set(tokens) | set(registry.tokens)):
        row, recorded = tokens.get(token_hash), registry.tokens.get(token_hash)
        ref = token_hash[:12]
        if row is None:
            if recorded is not None and not recorded.revoked:
                found.append(Finding("token", ref, "row", REGISTRY_MISMATCH, "issued, but deleted"))
        elif recorded is None:
            found.append(Finding("token", ref, "row", TOKEN_UNRECORDED, "never issued"))
        elif row != recorded:
            found.append(
                Finding(
                    "token",
                    ref,
                    "actor" if row.actor != recorded.actor else "revoked",
                    REGISTRY_MISMATCH,
                    f"table says {row.actor} revoked={row.revoked}, the registry recorded "
                    f"{recorded.actor} revoked={recorded.revoked}",
                )
            )
    for name in sorted(set(policies or {}) | set(registry.policies)):
        stored = (policies or {}).get(name)
        chained = registry.policies.get(name)
        if stored is None:
            continue  # policies are only ever replaced, never deleted; an absent row is unused
        if chained is None:
            found.append(Finding("automation", name, "policy", POLICY_MISMATCH, "never recorded"))
        elif stored.version != chained.version or digest(stored.policy) != digest(chained.policy):
            found.append(
                Finding(
                    "automation",
                    name,
                    "policy",
                    POLICY_MISMATCH,
                    f"the stored policy ({stored.version}) is not the one registered last "
                    f"({chained.version})",
                )
            )
    return found
