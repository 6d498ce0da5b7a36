"""The registry chain on its own (``core/registry.py``): :func:`fold` replays actors, roles,
tokens and policies from the hash-chained events and finds a chain broken or altered;
:func:`compare` finds where the tables say what the chain never recorded.

The store tests and the tamper labs do the same through a database; these say which rule
finds what, and that a table alone grants nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from stopline.core.records import Actor
from stopline.core.registry import (
    ADD,
    CHAIN_BROKEN,
    POLICY,
    POLICY_MISMATCH,
    REGISTRY_MISMATCH,
    REVOKE,
    REVOKE_ROLE,
    TOKEN_ISSUE,
    TOKEN_REVOKE,
    TOKEN_UNRECORDED,
    PolicyRecord,
    Registry,
    RegistryEvent,
    Token,
    actor_state,
    compare,
    event_hash,
    fold,
)

from .helpers import T0, reasons_of

Change = tuple[str, str, Mapping[str, Any]]
POLICY_DOC = {"retry": {"max_attempts": 3}}


def chained(*changes: Change) -> list[RegistryEvent]:
    """The registry events a store appends for ``changes`` (subject, change, detail)."""
    events: list[RegistryEvent] = []
    prev = ""
    for n, (actor, change, detail) in enumerate(changes, start=1):
        at = T0 + timedelta(seconds=n)
        hashed = event_hash(at, actor, change, detail, prev)
        events.append(RegistryEvent(n, at, actor, change, detail, prev, hashed))
        prev = hashed
    return events


def actor(name: str, change: str, holds: set[str], active: bool = True, **extra: Any) -> Change:
    """An actor event as the store writes it now: with the actor it leaves behind."""
    state = actor_state(Actor(name, frozenset(holds), active))
    return (name, change, {**extra, "state": state})


def history() -> list[RegistryEvent]:
    """alice added as approver, bob as operator and approver, then bob's approver role
    stripped; carol added and revoked; two tokens issued, one revoked; a policy registered
    twice."""
    return chained(
        actor("alice", ADD, {"approver"}, roles=["approver"]),
        actor("bob", ADD, {"operator", "approver"}, roles=["operator", "approver"]),
        actor("bob", REVOKE_ROLE, {"operator"}, role="approver"),
        actor("carol", ADD, {"operator"}, roles=["operator"]),
        actor("carol", REVOKE, {"operator"}, active=False),
        ("alice", TOKEN_ISSUE, {"token": "t-alice"}),
        ("carol", TOKEN_ISSUE, {"token": "t-carol"}),
        ("carol", TOKEN_REVOKE, {"tokens": ["t-carol"]}),
        ("automation:auto", POLICY, {"version": "v1", "policy": {"retry": {}}}),
        ("automation:auto", POLICY, {"version": "v2", "policy": POLICY_DOC}),
    )


def tables(registry: Registry) -> tuple[dict[str, Actor], dict[str, Token], dict[str, Any]]:
    """The tables a store keeps beside the chain, as they are when nothing was edited."""
    return dict(registry.actors), dict(registry.tokens), dict(registry.policies)


# --- fold ------------------------------------------------------------------------------------------


def test_fold_replays_who_holds_what() -> None:
    events = history()
    registry = fold(events)
    assert registry.ok and registry.findings == []
    assert registry.actors == {
        "alice": Actor("alice", frozenset({"approver"}), True),
        "bob": Actor("bob", frozenset({"operator"}), True),
        "carol": Actor("carol", frozenset({"operator"}), False),
    }
    assert registry.tokens == {"t-alice": Token("alice"), "t-carol": Token("carol", True)}
    assert registry.policies == {"auto": PolicyRecord("v2", POLICY_DOC)}
    assert (registry.head, registry.length) == (events[-1].hash, len(events))


def test_fold_replays_events_written_before_they_recorded_the_actor() -> None:
    """Older events carry only the change: an add grants its roles on top of an active
    actor's, a revoked actor added again starts afresh, a role revoked is taken away."""
    registry = fold(
        chained(
            ("dan", ADD, {"roles": ["approver"]}),
            ("dan", ADD, {"roles": ["operator"]}),
            ("dan", REVOKE_ROLE, {"role": "approver"}),
            ("eve", ADD, {"roles": ["approver", "operator"]}),
            ("eve", REVOKE, {}),
            ("eve", ADD, {"roles": ["viewer"]}),
        )
    )
    assert registry.ok
    assert registry.actors["dan"] == Actor("dan", frozenset({"operator"}), True)
    assert registry.actors["eve"] == Actor("eve", frozenset({"viewer"}), True)


def test_an_altered_event_is_found_and_the_rest_still_replayed() -> None:
    events = history()
    granted = {"roles": ["admin", "approver", "operator"], "active": True}  # not what was added
    events[1] = replace(events[1], detail={**events[1].detail, "state": granted})
    registry = fold(events)
    assert [(f.reason, f.field) for f in registry.findings] == [(CHAIN_BROKEN, "hash")]
    assert registry.tokens["t-carol"].revoked  # what follows is still folded


def test_an_event_deleted_from_the_chain_breaks_the_link_after_it() -> None:
    """Deleting carol's revocation would give her back the operator role: the event after
    it no longer links to the one before it."""
    events = history()
    del events[4]
    registry = fold(events)
    assert [(f.reason, f.field) for f in registry.findings] == [(CHAIN_BROKEN, "prev_hash")]
    assert registry.findings[0].ref == "6 (alice token_issue)"  # the event after the gap


def test_an_event_rewritten_and_rehashed_breaks_the_next_link() -> None:
    events = history()
    forged_detail = {"state": {"roles": ["operator"], "active": True}}
    at = events[4].at
    forged = replace(
        events[4],
        detail=forged_detail,
        hash=event_hash(at, "carol", REVOKE, forged_detail, events[4].prev_hash),
    )
    events[4] = forged
    registry = fold(events)
    assert [(f.reason, f.field) for f in registry.findings] == [(CHAIN_BROKEN, "prev_hash")]


def test_a_malformed_event_is_a_finding_not_a_crash() -> None:
    registry = fold(chained(("automation:auto", POLICY, {"policy": {}})))  # no version
    assert [(f.reason, f.field) for f in registry.findings] == [(CHAIN_BROKEN, "detail")]


# --- compare ---------------------------------------------------------------------------------------


def test_tables_that_match_the_chain_have_no_findings() -> None:
    registry = fold(history())
    assert compare(registry, *tables(registry)) == []


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda a: a.update(mallory=Actor("mallory", frozenset({"approver"}))), "row"),
        (lambda a: a.pop("alice"), "row"),
        (lambda a: a.update(bob=Actor("bob", frozenset({"operator", "approver"}))), "roles"),
        (lambda a: a.update(carol=Actor("carol", frozenset({"operator"}), True)), "active"),
    ],
    ids=["an actor never recorded", "an actor deleted", "a role granted", "a revoked actor back"],
)
def test_an_actor_row_the_chain_does_not_say_is_found(edit: Any, field: str) -> None:
    registry = fold(history())
    actors, tokens, policies = tables(registry)
    edit(actors)
    found = compare(registry, actors, tokens, policies)
    assert [(f.reason, f.field) for f in found] == [(REGISTRY_MISMATCH, field)]


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda t: t.update({"t-forged": Token("alice")}), (TOKEN_UNRECORDED, "row")),
        (lambda t: t.pop("t-alice"), (REGISTRY_MISMATCH, "row")),
        (lambda t: t.update({"t-carol": Token("carol")}), (REGISTRY_MISMATCH, "revoked")),
        (lambda t: t.update({"t-alice": Token("bob")}), (REGISTRY_MISMATCH, "actor")),
    ],
    ids=["a token never issued", "a live token deleted", "a revoked token live", "reassigned"],
)
def test_a_token_row_the_chain_does_not_say_is_found(edit: Any, expected: tuple[str, str]) -> None:
    registry = fold(history())
    actors, tokens, policies = tables(registry)
    edit(tokens)
    found = compare(registry, actors, tokens, policies)
    assert [(f.reason, f.field) for f in found] == [expected]


def test_a_revoked_token_deleted_from_its_table_is_no_finding() -> None:
    """A revoked token grants nothing, kept or not."""
    registry = fold(history())
    actors, tokens, policies = tables(registry)
    del tokens["t-carol"]
    assert compare(registry, actors, tokens, policies) == []


@pytest.mark.parametrize(
    "stored",
    [
        PolicyRecord("v1", {"retry": {}}),  # the earlier policy put back
        PolicyRecord("v2", {"retry": {"max_attempts": 99}}),  # same version, other rules
        PolicyRecord("v1", POLICY_DOC),  # the same rules under another version
    ],
    ids=["an older version", "other rules, same version", "same rules, other version"],
)
def test_a_policy_row_that_is_not_the_last_registered_is_found(stored: PolicyRecord) -> None:
    registry = fold(history())
    actors, tokens, policies = tables(registry)
    policies["auto"] = stored
    found = compare(registry, actors, tokens, policies)
    assert [(f.reason, f.kind) for f in found] == [(POLICY_MISMATCH, "automation")]


def test_a_policy_never_registered_is_found_and_a_missing_row_is_not() -> None:
    registry = fold(history())
    actors, tokens, policies = tables(registry)
    policies["other"] = PolicyRecord("v9", {})
    assert reasons_of(compare(registry, actors, tokens, policies)) == {POLICY_MISMATCH}
    del policies["other"], policies["auto"]
    assert compare(registry, actors, tokens, policies) == []
