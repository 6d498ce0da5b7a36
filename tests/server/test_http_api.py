"""The JSON API against a real server process on the demo database."""

from __future__ import annotations

from collections.abc import Callable

from stopline.commands.table import COMMANDS

from .conftest import Demo, add_tokens
from .httphelp import Server, nothing_written

MSG_1041 = "support-triage/msg-1041"
CHECKOUT = "service-health/checkout-api"


def test_list_and_filter_items(demo: Demo, live: Server) -> None:
    with live.client(demo.tokens["dana"]) as c:
        everything = c.get("/api/items").json()["items"]
        assert len(everything) == 8
        waiting = c.get("/api/items", params={"state": "awaiting_approval"}).json()["items"]
        assert {i["key"] for i in waiting} == {"msg-1041", "msg-1044", "checkout-api"}
        health = c.get("/api/items", params={"automation": "service-health"}).json()["items"]
        assert {i["key"] for i in health} == {"checkout-api", "search", "billing-api"}
        stopped = c.get("/api/items", params={"state_class": "stop", "sort": "newest"}).json()
        ages = [i["age_seconds"] for i in stopped["items"]]
        assert len(ages) == 7 and ages == sorted(ages)
        assert c.get("/api/items", params={"overdue": "true"}).json()["items"] == []
        one = c.get("/api/items", params={"automation": "support-triage", "key": "msg-1043"})
        assert [i["state"] for i in one.json()["items"]] == ["exception"]
        bad = c.get("/api/items", params={"state": "nonsense", "limit": "0"})
        assert bad.status_code == 422
        assert len(bad.json()["problems"]) == 2


def test_overdue_follows_the_server_option(demo: Demo, start_server: Callable[..., Server]) -> None:
    server = start_server(demo.url, STOPLINE_OVERDUE_AFTER="0.001")
    with server.client(demo.tokens["dana"]) as c:
        overdue = c.get("/api/items", params={"overdue": "true"}).json()["items"]
        assert len(overdue) == 7 and all(i["overdue"] for i in overdue)


def test_show_and_history(demo: Demo, live: Server) -> None:
    item = demo.item(MSG_1041)
    with live.client(demo.tokens["dana"]) as c:
        shown = c.get(f"/api/items/{item.id}").json()
        assert shown["key"] == "msg-1041" and shown["state"] == "awaiting_approval"
        assert shown["proposal"]["digest"] == item.doc("proposal")["digest"]
        assert shown["history_length"] == 3
        events = c.get(f"/api/items/{item.id}/history").json()["events"]
        assert [e["command"] for e in events] == ["discover", "observe", "propose"]
        missing = c.get("/api/items/itm_nope")
        assert missing.status_code == 404
        assert missing.json()["reasons"] == ["unknown_item"]
        me = c.get("/api/me").json()
        assert me == {
            "actor": "dana",
            "roles": ["viewer"],
            "can_command": False,
            "read_only": False,
            "mode": "unsigned",
        }


def test_approve_applied_then_stale_digest_refused(demo: Demo, live: Server) -> None:
    reply = demo.item(MSG_1041)
    digest = reply.doc("proposal")["digest"]
    with live.client(demo.tokens["alice"]) as alice:
        ok = alice.post(f"/api/items/{reply.id}/approve", json={"proposal": digest})
        assert ok.status_code == 200
        assert ok.json() == {
            "decision": "applied",
            "reasons": [],
            "item": reply.id,
            "state": "approved",
            "sequence": 4,
            "explanation": [],
            "details": {},
        }
        events = alice.get(f"/api/items/{reply.id}/history").json()["events"]
        assert (events[-1]["command"], events[-1]["actor"]) == ("approve", "alice")

    restart = demo.item(CHECKOUT)
    old = restart.doc("proposal")["digest"]
    with live.client(demo.tokens["carol"]) as carol:
        params = {**restart.doc("proposal")["params"], "max_unavailable": 2}
        edited = carol.post(f"/api/items/{restart.id}/edit", json={"params": params})
        assert edited.json()["decision"] == "applied"
    with live.client(demo.tokens["alice"]) as alice, nothing_written(demo.url):
        stale = alice.post(f"/api/items/{restart.id}/approve", json={"proposal": old})
        assert stale.status_code == 409
        assert stale.json()["decision"] == "refused"
        assert "proposal_digest_mismatch" in stale.json()["reasons"]
        assert stale.json()["sequence"] is None
        # the refusal explains itself: what changed, field by field (additive fields)
        assert "edited by carol" in stale.json()["explanation"][0]
        changed = {d["field"]: d for d in stale.json()["details"]["diff"]}
        assert changed["params.max_unavailable"]["after"] == 2
        short = alice.post(f"/api/items/{restart.id}/approve", json={"proposal": old[:8]})
        assert short.status_code == 422 and "at least 12" in short.json()["message"]
    current = demo.item(CHECKOUT).doc("proposal")["digest"]
    with live.client(demo.tokens["alice"]) as alice:
        prefixed = alice.post(f"/api/items/{restart.id}/approve", json={"proposal": current[:12]})
        assert prefixed.status_code == 200 and prefixed.json()["decision"] == "applied"


def test_core_refusals_are_409_with_every_reason(demo: Demo, live: Server) -> None:
    restart = demo.item(CHECKOUT)
    with live.client(demo.tokens["carol"]) as carol, nothing_written(demo.url):
        # carol is an operator, not an approver: the core refuses, naming every failed rule
        refused = carol.post(f"/api/items/{restart.id}/approve", json={"proposal": "0" * 64})
        assert refused.status_code == 409
        assert set(refused.json()["reasons"]) == {
            "proposal_digest_mismatch",
            "actor_not_authorized",
        }
        unknown = carol.post("/api/items/itm_nope/close", json={"reason": "x"})
        assert unknown.status_code == 409 and unknown.json()["reasons"] == ["unknown_item"]
        illegal = carol.post(f"/api/items/{restart.id}/resume", json={"reason": "x"})
        assert "illegal_transition" in illegal.json()["reasons"]


def test_idempotency_key(demo: Demo, live: Server) -> None:
    restart = demo.item(CHECKOUT)
    digest = restart.doc("proposal")["digest"]
    with live.client(demo.tokens["alice"]) as alice:
        first = alice.post(
            f"/api/items/{restart.id}/approve",
            json={"proposal": digest},
            headers={"Idempotency-Key": "approve-once"},
        )
        assert first.json()["decision"] == "applied"
        assert first.json()["state"] == "awaiting_approval"  # 1 of 2
        with nothing_written(demo.url):
            again = alice.post(
                f"/api/items/{restart.id}/approve",
                json={"proposal": digest},
                headers={"Idempotency-Key": "approve-once"},
            )
            assert again.status_code == 200
            assert again.json()["decision"] == "zero_write"
            other = alice.post(
                f"/api/items/{restart.id}/reject",
                json={"reason": "no"},
                headers={"Idempotency-Key": "approve-once"},
            )
            assert other.status_code == 409
            assert other.json()["reasons"] == ["idempotency_key_reuse"]
            empty = alice.post(
                f"/api/items/{restart.id}/approve",
                json={"proposal": digest},
                headers={"Idempotency-Key": "two words"},
            )
            assert empty.status_code == 422


def test_malformed_input_is_422_and_writes_nothing(demo: Demo, live: Server) -> None:
    restart = demo.item(CHECKOUT)
    with live.client(demo.tokens["alice"]) as alice, nothing_written(demo.url):
        url = f"/api/items/{restart.id}"
        cases = [
            (f"{url}/approve", b"{not json"),
            (f"{url}/finalize", b"\t"),  # only whitespace: not JSON, and not "no body" either
            (f"{url}/approve", b" \r\n"),
            (f"{url}/approve", b"[]"),
            (f"{url}/approve", b"{}"),
            (f"{url}/approve", b'{"proposal": 7}'),
            (f"{url}/close", b'{"reason": "   "}'),
            (f"{url}/close", b'{"reason": "ok", "extra": 1}'),
            (f"{url}/resume", b'{"reason": "ok", "attempts": "3"}'),
            (f"{url}/revise", b'{"reason": "ok", "artifacts": []}'),
            (f"{url}/review", b'{"packet": "p", "verdict": "maybe"}'),
            (f"{url}/edit", b'{"params": {"x": NaN}}'),
            (f"{url}/edit", b'{"params": {"x": 100000000000000000000}}'),
            (f"{url}/edit", b'{"params": {"x": 1e999}}'),
            (f"{url}/edit", b'{"params": {"x": "\\ud800"}}'),
            (f"{url}/edit", b'{"params": ' + b'{"x": ' * 100 + b"1" + b"}" * 101),
            (f"{url}/resolve", b'{"reason": "ok", "input": {"n": [-9007199254740992]}}'),
            ("/api/items/bad%20id/close", b'{"reason": "ok"}'),
        ]
        for path, body in cases:
            response = alice.post(path, content=body, headers={"content-type": "application/json"})
            assert response.status_code == 422, (path, body, response.text)
            assert response.json()["error"] == "invalid_input"


def test_unauthenticated_is_401(demo: Demo, live: Server) -> None:
    item = demo.item(MSG_1041)
    with live.client() as anonymous, nothing_written(demo.url):
        for response in (
            anonymous.get("/api/items"),
            anonymous.get(f"/api/items/{item.id}"),
            anonymous.post(f"/api/items/{item.id}/close", json={"reason": "x"}),
            anonymous.post(
                f"/api/items/{item.id}/close",
                json={"reason": "x"},
                headers={"Authorization": "Bearer stl_not_a_token"},
            ),
            anonymous.post(
                f"/api/items/{item.id}/close",
                json={"reason": "x"},
                headers={"Authorization": f"Basic {demo.tokens['alice']}"},
            ),
        ):
            assert response.status_code == 401
            assert response.headers["www-authenticate"].startswith("Bearer")


def test_read_only_server_refuses_commands(demo: Demo, start_server: Callable[..., Server]) -> None:
    server = start_server(demo.url, STOPLINE_READ_ONLY="1")
    item = demo.item(MSG_1041)
    with server.client(demo.tokens["alice"]) as alice, nothing_written(demo.url):
        assert alice.get(f"/api/items/{item.id}").status_code == 200
        digest = item.doc("proposal")["digest"]
        refused = alice.post(f"/api/items/{item.id}/approve", json={"proposal": digest})
        assert refused.status_code == 403
        assert refused.json()["error"] == "read_only"
        assert alice.get("/api/me").json()["can_command"] is False


def test_openapi_documents_every_command(live: Server) -> None:
    doc = live.client().get("/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    for name in COMMANDS:
        op = doc["paths"][f"/api/items/{{item}}/{name}"]["post"]
        assert {"200", "401", "403", "409", "413", "422"} <= set(op["responses"])
        schema = op["requestBody"]["content"]["application/json"]["schema"]
        assert schema["additionalProperties"] is False
        assert "actor" not in schema["properties"]
        assert any(p["name"] == "Idempotency-Key" for p in op["parameters"])
    for path in ("/api/items", "/api/items/{item}", "/api/items/{item}/history", "/api/me"):
        assert "401" in doc["paths"][path]["get"]["responses"]


def test_metrics(demo: Demo, live: Server) -> None:
    with live.client(demo.tokens["carol"]) as carol:
        for _ in range(2):  # one audit row counting two refusals: the metric adds the counts
            carol.post(f"/api/items/{demo.item(CHECKOUT).id}/approve", json={"proposal": "0" * 64})
    response = live.client().get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    assert 'stopline_items{state="awaiting_approval",state_class="stop"} 3' in text
    assert 'stopline_stopped_oldest_age_seconds{state="exhausted"}' in text
    assert 'stopline_decisions_total{command="propose",kind="applied"} 4' in text
    assert 'stopline_decisions_total{command="approve",kind="refused"} 2' in text
    assert (
        'stopline_decision_reasons_total{command="approve",kind="refused",reason="actor_not_authorized"} 2'
        in text
    )
    assert "stopline_exhaustions_total 1" in text
    assert 'stopline_deliveries_total{outcome="completed"} 1' in text
    assert "stopline_readback_mismatches_total 0" in text
    assert 'stopline_revisions_total{outcome="opened"} 0' in text
    assert 'stopline_attempts_total{outcome="retry"} 2' in text
    # automations are a label (by automation); items, their keys and people never are
    assert 'stopline_automation_items{automation="support-triage",state="exception"} 1' in text
    for forbidden in ("itm_", "msg-10", "checkout-api", "alice"):
        assert forbidden not in text


def test_the_api_on_each_store(demo_url: str, start_server: Callable[..., Server]) -> None:
    found = add_tokens(Demo(demo_url))
    server = start_server(demo_url)
    reply = found.item(MSG_1041)
    with server.client(found.tokens["alice"]) as alice:
        assert len(alice.get("/api/items").json()["items"]) == 8
        assert alice.get(f"/api/items/{reply.id}/history").status_code == 200
        stale = alice.post(f"/api/items/{reply.id}/approve", json={"proposal": "0" * 64})
        assert stale.status_code == 409
        digest = reply.doc("proposal")["digest"]
        done = alice.post(f"/api/items/{reply.id}/approve", json={"proposal": digest})
        assert done.json()["decision"] == "applied"
        text = alice.get("/metrics").text
        assert 'stopline_decisions_total{command="approve",kind="refused"} 1' in text
