"""An ``Idempotency-Key`` sent again over HTTP with another body, against a real server
process on a fresh database of each kind.

The same key with the same body answers the first decision again and writes nothing. The same
key with another body (another decision, proposal digest, item) is refused with
``idempotency_key_reuse``, writes nothing, and is never answered with the first decision. Keys
are the actor's own: another actor's key neither replays nor blocks that actor's command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from stopline.controller import Controller
from stopline.store import open_store, raw

from .conftest import Demo, add_tokens
from .httphelp import Server, nothing_written

CHECKOUT = "service-health/checkout-api"
MSG_1044 = "support-triage/msg-1044"
KEY = "approve-checkout-1"


def post(client: httpx.Client, ref: str, command: str, body: dict[str, Any]) -> httpx.Response:
    return client.post(f"/api/items/{ref}/{command}", json=body, headers={"Idempotency-Key": KEY})


def reused(answer: httpx.Response) -> None:
    """Refused as a reused key: never the first decision, nothing applied."""
    assert answer.status_code == 409, answer.text
    doc = answer.json()
    assert doc["decision"] == "refused" and doc["reasons"] == ["idempotency_key_reuse"], doc
    assert doc["sequence"] is None


def test_a_key_sent_again_with_another_body_is_refused_and_writes_nothing(
    demo_url: str, start_server: Callable[..., Server]
) -> None:
    demo = add_tokens(Demo(demo_url))
    checkout = demo.item(CHECKOUT)
    digest = checkout.doc("proposal")["digest"]
    server = start_server(demo.url)
    with server.client(demo.tokens["alice"]) as alice:
        first = post(alice, checkout.id, "approve", {"proposal": digest})
        assert first.status_code == 200 and first.json()["decision"] == "applied", first.text
        with nothing_written(demo.url):
            same = post(alice, checkout.id, "approve", {"proposal": digest[:16]})  # same digest
            assert same.status_code == 200
            assert (same.json()["decision"], same.json()["reasons"]) == (
                "zero_write",
                ["idempotent_replay"],
            )
            assert same.json()["item"] == checkout.id
            reused(post(alice, checkout.id, "reject", {"reason": "no"}))  # another decision
            reused(post(alice, checkout.id, "approve", {"proposal": "0" * 64}))  # another digest
            other = demo.item(MSG_1044)
            other_digest = other.doc("proposal")["digest"]
            reused(post(alice, other.id, "approve", {"proposal": other_digest}))  # another item
    # the proposal replaced under the key's first approval: the key is not an approval of it
    with server.client(demo.tokens["carol"]) as carol:
        edited = carol.post(f"/api/items/{checkout.id}/edit", json={"params": {"service": "x"}})
        assert edited.json()["decision"] == "applied", edited.text
    new_digest = demo.item(CHECKOUT).doc("proposal")["digest"]
    assert new_digest != digest
    with server.client(demo.tokens["alice"]) as alice, nothing_written(demo.url):
        reused(post(alice, checkout.id, "approve", {"proposal": new_digest}))
    assert list(demo.item(CHECKOUT).doc("proposal")["approvals"]) == []


def test_another_actors_key_neither_answers_nor_blocks(
    demo_url: str, start_server: Callable[..., Server]
) -> None:
    """bob sends alice's key with the very body alice sent: he is not answered with her
    decision, and his own approval is decided as his (the key is his own)."""
    demo = add_tokens(Demo(demo_url))
    checkout = demo.item(CHECKOUT)
    digest = checkout.doc("proposal")["digest"]
    server = start_server(demo.url)
    with server.client(demo.tokens["alice"]) as alice:
        assert post(alice, checkout.id, "approve", {"proposal": digest}).status_code == 200
    with server.client(demo.tokens["bob"]) as bob:
        his = post(bob, checkout.id, "approve", {"proposal": digest})
        assert his.status_code == 200, his.text
        assert his.json()["decision"] == "applied"
        assert his.json()["state"] == "approved"
        again = post(bob, checkout.id, "approve", {"proposal": digest})
        assert again.json()["reasons"] == ["idempotent_replay"]
    store = open_store(demo.url)
    try:
        approvals = Controller(store).item(checkout.id).doc("proposal")["approvals"]
    finally:
        store.close()
    assert [a["actor"] for a in approvals] == ["alice", "bob"]


def test_a_key_stored_before_keys_were_the_actors_own_still_answers(demo_url: str) -> None:
    """A row under the key as given (how every key was stored before): the same command
    replays it, another is refused as a reused key; nothing runs twice."""
    demo = add_tokens(Demo(demo_url))
    checkout = demo.item(CHECKOUT)
    digest = checkout.doc("proposal")["digest"]
    store = open_store(demo.url)
    try:
        controller = Controller(store)
        first = controller.approve(checkout.id, proposal=digest, actor="alice", idempotency_key=KEY)
        assert first.outcome.value == "applied"
        with raw.writing(store) as cur:  # the row as an older stopline stored it
            cur.execute(
                "UPDATE idempotency SET key = " + ("?" if store.dialect == "sqlite" else "%s"),
                (KEY,),
            )
        again = controller.approve(checkout.id, proposal=digest, actor="alice", idempotency_key=KEY)
        assert (again.outcome.value, again.reasons) == ("zero_write", ("idempotent_replay",))
        for actor in ("alice", "bob"):
            other = controller.reject(checkout.id, actor=actor, reason="no", idempotency_key=KEY)
            assert other.reasons == ("idempotency_key_reuse",), other
        assert [a["actor"] for a in controller.item(checkout.id).doc("proposal")["approvals"]] == [
            "alice"
        ]
    finally:
        store.close()
