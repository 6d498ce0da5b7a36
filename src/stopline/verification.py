"""``stopline verify``: every finding about a store, from its own records alone.

Items: each history replays (chain, sequence, legal transitions), its last event seals the
stored record, the proposal hashes to its digest and each counted approval was recorded by an
approve event; every document an item row references is stored and hashes to its digest. The
store: the ledger holds every item's creation and every person's command
with the hash it has now (a deleted item, a rewritten history), the registry tables say what
the registry chain recorded, every idempotency key matches the event written under it, names
are in the safe alphabet. Recorded incidents (items stopped ``integrity_failed``) are listed
apart: they were found and stopped at the time.

What this cannot see without a key outside the database: a rewrite of a whole history made
consistent by someone who recomputes every hash (see docs/security.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from .core.approval import rule_differences
from .core.integrity import Finding, head_findings
from .core.ledger import ledger_findings
from .core.names import lookalikes, name_problem
from .core.policy import Policy
from .core.records import Event, Item
from .core.states import STOP_STATES, State
from .core.verify import (
    STATE_CLASS_MISMATCH,
    idempotency_findings,
    incidents,
    stop_key_findings,
    verify_item,
)
from .store import Store
from .store.outbox import Notification, message_id
from .trust.authority import Authority, Trust
from .trust.checks import signature_findings

NAME_INVALID = "name_invalid"
PROPOSAL_RULE_MISMATCH = "proposal_rule_mismatch"
LEASE_EXCESSIVE = "lease_excessive"
LEASE_SLACK = 2  # a renewed lease ends at most one lease_seconds after its last renewal
NAME_LOOKALIKE = "name_lookalike"
NOTIFICATION_FORGED = "notification_forged"


@dataclass
class Report:
    items: int = 0
    events: int = 0
    findings: list[Finding] = field(default_factory=list)
    incidents: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_plain(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "items": self.items,
            "events": self.events,
            "problems": [f.text() for f in self.findings],
            "findings": [f.to_plain() for f in self.findings],
            "incidents": self.incidents,
        }


def policy_findings(item: Item, policy: Policy | None, now: datetime) -> list[Finding]:
    """What an item holds that its automation's registered policy never allows: a proposal
    whose rule is not its action's rule, a lease far longer than the automation's."""
    if policy is None:
        return []
    found = []
    proposal = item.doc("proposal")  # not an object: a malformed record, reported by verify_item
    if isinstance(proposal, Mapping) and proposal.get("policy_version") in policy.approval.versions:
        different = rule_differences(proposal, policy.approval.rule(str(proposal.get("action"))))
        if different:
            found.append(
                Finding(
                    "item",
                    item.id,
                    "proposal",
                    PROPOSAL_RULE_MISMATCH,
                    f"its rule differs from the policy's in {', '.join(different)}",
                )
            )
    expires = item.lease_expires_at
    if item.lease_owner is not None and expires is not None:
        allowed = now + timedelta(seconds=policy.lease_seconds * LEASE_SLACK + 60)
        if expires > allowed:
            found.append(
                Finding(
                    "item",
                    item.id,
                    "lease",
                    LEASE_EXCESSIVE,
                    f"leased until {expires.isoformat()}, far beyond the automation's "
                    f"{policy.lease_seconds:g} s lease",
                )
            )
    return found


def outbox_findings(
    notifications: list[Notification], histories: dict[str, list[Event]]
) -> list[Finding]:
    """Outbox rows no notifier made: a message is about an event that stopped its item, and
    its id is derived from (item, event, URL). (A notifier never sends what a row says: it
    sends to its own endpoints what the item's history says; this reports the row.)"""
    found = []
    for n in notifications:
        events = histories.get(n.item_id, [])
        event = events[n.seq - 1] if 1 <= n.seq <= len(events) else None
        if n.id != message_id(n.item_id, n.seq, n.url):
            why = "its id is not the one derived from its item, event and URL"
        elif event is None:
            why = f"its item has no event {n.seq}"
        elif event.to_state not in STOP_STATES or event.from_state == event.to_state:
            why = f"event {n.seq} of its item is not a stop"
        else:
            continue
        found.append(Finding("notification", n.id, "message", NOTIFICATION_FORGED, why))
    return found


def verify_store(store: Store, trust: Trust | None = None) -> Report:
    """Everything found wrong with ``store``; with ``trust`` (signed mode) also every signature
    the items' authority rests on and every signed registry document."""
    report = Report()
    registry = store.registry()
    authority = None if trust is None else Authority.build(trust, registry.signed)
    now = datetime.now(UTC)
    policies = {name: Policy.from_plain(r.policy) for name, r in registry.policies.items()}
    histories: dict[str, list[Event]] = {}
    legacy = store.legacy_seals()
    keys = store.stop_keys()
    for item, events in store.iter_items_with_events():
        report.items += 1
        report.events += len(events)
        histories[item.id] = events
        report.findings += verify_item(item, events)
        seal = legacy.get(item.id)
        head = events[-1] if events else None
        sealed_at_upgrade = seal[1] if seal and head is not None and seal[0] == head.hash else None
        report.findings += [
            f for f in head_findings(item, head, sealed_at_upgrade) if f not in report.findings
        ]
        if authority is not None:
            report.findings += signature_findings(item, head, authority, now)
        report.findings += policy_findings(item, policies.get(item.automation), now)
        if item.id in keys:
            report.findings += stop_key_findings(item, events, *keys[item.id])
        problem = name_problem("automation", item.automation)
        if problem:
            report.findings.append(Finding("item", item.id, "automation", NAME_INVALID, problem))
        report.incidents += incidents(item, events)
    for item_id, state, stored_class in store.item_classes():
        try:
            expected = State(state).state_class.value
        except ValueError:
            expected = "?"
        if stored_class != expected:
            report.findings.append(
                Finding(
                    "item",
                    item_id,
                    "state_class",
                    STATE_CLASS_MISMATCH,
                    f"state {state} is {expected}, the row says {stored_class}",
                )
            )
    report.findings += store.document_findings()
    # (the registry against the ledger is in registry.findings, below)
    report.findings += ledger_findings(store.ledger(), histories)
    report.findings += registry.findings
    if authority is not None:
        report.findings += [
            Finding("registry", "signed", "signature", "signature_invalid", problem)
            for problem in authority.problems
        ]
    for name, actor in sorted(registry.actors.items()):
        problem = name_problem("actor", name)
        if problem:
            report.findings.append(Finding("actor", name, "name", NAME_INVALID, problem))
        for role in sorted(actor.roles):
            problem = name_problem("role", role)
            if problem:
                report.findings.append(Finding("actor", name, "roles", NAME_INVALID, problem))
    for first, second in lookalikes(a for a, v in registry.actors.items() if v.active):
        report.findings.append(
            Finding("actor", second, "name", NAME_LOOKALIKE, f"reads the same as {first}")
        )
    for automation in sorted(registry.policies):
        problem = name_problem("automation", automation)
        if problem:
            report.findings.append(Finding("automation", automation, "name", NAME_INVALID, problem))
    report.findings += idempotency_findings(store.idempotency_records(), histories)
    report.findings += outbox_findings(store.outbox.notifications(limit=10**9), histories)
    return report
