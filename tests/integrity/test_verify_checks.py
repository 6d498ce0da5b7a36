"""``stopline verify``'s checks that no tamper edit of the catalogue isolates: outbox rows no
notifier made, a proposal whose rule is not its policy's, a lease far past the automation's,
names outside the safe alphabet or that read as another's. Each is made precisely (the pure
checks from a real store's records, the rest by SQL) and must be reported by its own code."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from stopline.core.frozen import freeze, thaw
from stopline.core.policy import Policy
from stopline.core.registry import AUTOMATION_PREFIX, POLICY
from stopline.core.states import STOP_STATES
from stopline.store import open_store
from stopline.store.outbox import Notification, message_id
from stopline.verification import (
    LEASE_EXCESSIVE,
    LEASE_SLACK,
    NAME_INVALID,
    NAME_LOOKALIKE,
    NOTIFICATION_FORGED,
    PROPOSAL_RULE_MISMATCH,
    outbox_findings,
    policy_findings,
    verify_store,
)

from .attacker import Attacker
from .lab import Vault

URL = "https://hooks.example.test/stopline"
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def _notification(item_id: str, seq: int, *, id: str | None = None) -> Notification:
    return Notification(
        id=message_id(item_id, seq, URL) if id is None else id,
        item_id=item_id,
        seq=seq,
        url=URL,
        type="item.stopped",
        payload="{}",
        status="pending",
        attempts=0,
        next_attempt_at=NOW,
        last_error=None,
        created_at=NOW,
        delivered_at=None,
    )


def test_outbox_rows_no_notifier_made_are_reported(vault_copy: Callable[[str], Vault]) -> None:
    vault = vault_copy("outbox")
    store = open_store(vault.url, migrate=False)
    try:
        item = store.find("vault", "pay-waiting")
        assert item is not None
        events = store.history(item.id)
    finally:
        store.close()
    stop = next(e.seq for e in events if e.to_state in STOP_STATES and e.from_state != e.to_state)
    assert stop > 1 and events[0].to_state not in STOP_STATES
    histories = {item.id: events}
    assert outbox_findings([_notification(item.id, stop)], histories) == []
    forged = {
        "an id not derived from its item, event and URL": _notification(
            item.id, stop, id="msg_" + "0" * 32
        ),
        "event 0": _notification(item.id, 0),
        "an event past the last": _notification(item.id, len(events) + 1),
        "an event that is not a stop": _notification(item.id, 1),
        "an event of no stored item": _notification("itm_gone", stop),
    }
    for what, row in forged.items():
        found = outbox_findings([row], histories)
        assert [(f.kind, f.ref, f.reason) for f in found] == [
            ("notification", row.id, NOTIFICATION_FORGED)
        ], what
    # an event that stays in its stop state (a note, a refusal kept) is no new stop either
    stayed = replace(events[stop - 1], from_state=events[stop - 1].to_state)
    kept = {item.id: [*events[: stop - 1], stayed, *events[stop:]]}
    found = outbox_findings([_notification(item.id, stop)], kept)
    assert [f.reason for f in found] == [NOTIFICATION_FORGED]


def test_a_proposal_rule_or_lease_the_policy_never_allows_is_reported(
    vault_copy: Callable[[str], Vault],
) -> None:
    vault = vault_copy("policy")
    store = open_store(vault.url, migrate=False)
    try:
        item = store.find("vault", "pay-waiting")
        assert item is not None
        policy = Policy.from_plain(store.registry().policies["vault"].policy)
    finally:
        store.close()
    assert policy_findings(item, policy, NOW) == []
    assert policy_findings(item, None, NOW) == []
    for field, value in (
        ("required_approvals", 7),
        ("required_roles", ["viewer"]),
        ("separation_of_duties", False),
    ):
        data = thaw(item.data)
        data["proposal"][field] = value
        edited = replace(item, data=freeze(data))
        found = policy_findings(edited, policy, NOW)
        assert [(f.ref, f.field, f.reason) for f in found] == [
            (item.id, "proposal", PROPOSAL_RULE_MISMATCH)
        ], field
        assert field in found[0].detail
    bound = timedelta(seconds=policy.lease_seconds * LEASE_SLACK + 60)
    within = replace(item, lease_owner="w1", lease_expires_at=NOW + bound)
    assert policy_findings(within, policy, NOW) == []
    beyond = replace(item, lease_owner="w1", lease_expires_at=NOW + bound + timedelta(seconds=1))
    assert [f.reason for f in policy_findings(beyond, policy, NOW)] == [LEASE_EXCESSIVE]
    unowned = replace(item, lease_owner=None, lease_expires_at=NOW + bound * 10)
    assert policy_findings(unowned, policy, NOW) == []


def store_policy(url: str) -> dict[str, object]:
    """The vault's policy as its registry event records it (version and document)."""
    store = open_store(url, migrate=False)
    try:
        record = store.registry().policies["vault"]
        return {"version": record.version, "policy": thaw(record.policy)}
    finally:
        store.close()


def test_names_outside_the_safe_alphabet_or_alike_are_reported(
    vault_copy: Callable[[str], Vault],
) -> None:
    """Names the registry commands refuse, written into the registry chain and an item row by
    SQL (a store from before the rules, or a writer of the database): each is reported."""
    vault = vault_copy("names")
    attacker = Attacker(vault.url)
    try:
        item = attacker.item("vault/pay-waiting")
        state = {"roles": ["Bad Role"], "active": True}
        attacker.append_registry("bad name", "add", {"roles": ["Bad Role"], "state": state}, NOW)
        alike = {"roles": ["viewer"], "active": True}
        attacker.append_registry("rn", "add", {"roles": ["viewer"], "state": alike}, NOW)
        attacker.append_registry("m", "add", {"roles": ["viewer"], "state": alike}, NOW)
        attacker.sql("UPDATE items SET automation = 'Vault Two' WHERE id = :id", {"id": item.id})
        recorded = store_policy(vault.url)
        attacker.append_registry(AUTOMATION_PREFIX + "Vault Two", POLICY, recorded, NOW)
    finally:
        attacker.close()
    store = open_store(vault.url, migrate=False)
    try:
        found = {(f.kind, f.ref, f.field, f.reason) for f in verify_store(store).findings}
    finally:
        store.close()
    assert ("actor", "bad name", "name", NAME_INVALID) in found
    assert ("actor", "bad name", "roles", NAME_INVALID) in found
    assert ("item", item.id, "automation", NAME_INVALID) in found
    assert ("automation", "Vault Two", "name", NAME_INVALID) in found
    assert {("actor", "m", "name", NAME_LOOKALIKE), ("actor", "rn", "name", NAME_LOOKALIKE)} & found
