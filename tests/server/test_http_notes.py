"""note and the author over HTTP and in the web inbox, against a real server process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from stopline.store import open_store
from stopline.verification import verify_store

from .conftest import Demo, add_tokens
from .httphelp import Server, actor_with_token, csrf_of, nothing_written, sign_in

SEARCH = "service-health/search"  # ready_for_review
CHECKOUT = "service-health/checkout-api"  # awaiting_approval
AI = {"kind": "ai", "name": "helper-7", "family": "example-family"}


def history(live: Server, token: str, item_id: str) -> list[dict]:  # type: ignore[type-arg]
    with live.client(token) as c:
        return c.get(f"/api/items/{item_id}/history").json()["events"]  # type: ignore[no-any-return]


def test_a_note_over_http_with_its_author_and_key(demo: Demo, live: Server) -> None:
    item = demo.item(SEARCH)
    path = f"/api/items/{item.id}/note"
    with live.client(demo.tokens["carol"]) as c:
        body = {"author": AI, "body": "logs look fine", "idempotency_key": "note-1"}
        done = c.post(path, json=body)
        assert done.status_code == 200, done.text
        assert (done.json()["decision"], done.json()["state"]) == ("applied", "ready_for_review")
        with nothing_written(demo.url):
            again = c.post(path, json=body)
            assert again.status_code == 200
            assert again.json()["reasons"] == ["idempotent_replay"]
            header = c.post(
                path,
                json={"author": AI, "body": "logs look fine"},
                headers={"Idempotency-Key": "note-1"},
            )
            assert header.json()["reasons"] == ["idempotent_replay"]
            other = c.post(path, json={**body, "body": "changed my mind"})
            assert other.status_code == 409
            assert other.json()["reasons"] == ["idempotency_key_reuse"]
    last = history(live, demo.tokens["dana"], item.id)[-1]
    assert (last["command"], last["actor"], last["detail"]["body"]) == (
        "note",
        "carol",
        "logs look fine",
    )
    assert last["detail"]["author"] == AI
    assert demo.item(SEARCH).state.value == "ready_for_review"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"body": ""},
        {"body": "   "},
        {"body": "x" * 10_001},
        {"body": 3},
        {"body": "ok", "author": "ai"},
        {"body": "ok", "author": {"kind": "robot"}},
        {"body": "ok", "author": {"kind": "ai", "name": "n"}},
        {"body": "ok", "author": {"kind": "human", "name": "alice"}},
        {"body": "ok", "author": {"kind": "human", "name": "", "family": ""}},  # a fuzzer's
        {"body": "ok", "author": {"kind": "ai", "name": "n", "family": "f", "x": 1}},
        {"body": "ok", "idempotency_key": "has space"},
        {"body": "ok", "idempotency_key": 7},
        {"body": "ok", "mood": "happy"},
        {"body": "ok", "actor": "alice"},
    ],
    ids=lambda b: "-".join(f"{k}" for k in b) or "empty",
)
def test_bad_input_is_422_and_writes_nothing(demo: Demo, live: Server, body: dict) -> None:  # type: ignore[type-arg]
    item = demo.item(SEARCH)
    with live.client(demo.tokens["carol"]) as c, nothing_written(demo.url):
        response = c.post(f"/api/items/{item.id}/note", json=body)
        assert response.status_code == 422, response.text
        assert response.json()["error"] == "invalid_input"


def test_a_key_in_the_body_and_another_in_the_header_is_422(demo: Demo, live: Server) -> None:
    item = demo.item(SEARCH)
    with live.client(demo.tokens["carol"]) as c, nothing_written(demo.url):
        response = c.post(
            f"/api/items/{item.id}/note",
            json={"body": "ok", "idempotency_key": "a"},
            headers={"Idempotency-Key": "b"},
        )
        assert response.status_code == 422
        assert "differ" in response.json()["message"]


def test_a_viewer_and_an_agent_claiming_to_be_human_get_nothing(demo: Demo, live: Server) -> None:
    """A viewer's note is 403; an actor holding only the agent role is a viewer to the operator
    API whatever author it declares."""
    token = actor_with_token(demo.url, "agent-7", ["agent"])
    waiting = demo.item(CHECKOUT)
    digest = waiting.doc("proposal")["digest"]
    with nothing_written(demo.url):
        with live.client(demo.tokens["dana"]) as c:
            assert c.post(f"/api/items/{waiting.id}/note", json={"body": "hi"}).status_code == 403
        with live.client(token) as c:
            human = {"kind": "human"}
            approve = c.post(
                f"/api/items/{waiting.id}/approve", json={"proposal": digest, "author": human}
            )
            assert approve.status_code == 403
            note = c.post(f"/api/items/{waiting.id}/note", json={"body": "hi", "author": human})
            assert note.status_code == 403
    assert demo.item(CHECKOUT).state.value == "awaiting_approval"


def test_a_note_by_the_web_form(demo: Demo, live: Server) -> None:
    """Anyone who may act sees the note form; a note keeps the state and shows in the history
    with its author; a blank note is shown again (422) and writes nothing."""
    item = demo.item(CHECKOUT)
    browser = sign_in(live, demo.tokens["alice"])
    page = browser.get(f"/items/{item.id}").text
    assert 'data-testid="action-note"' in page
    with nothing_written(demo.url):
        blank = browser.post(f"/items/{item.id}/note", data={"csrf": csrf_of(page), "body": " "})
        assert blank.status_code == 422 and 'data-testid="problems"' in blank.text
        declared = browser.post(
            f"/items/{item.id}/note",
            data={"csrf": csrf_of(page), "body": "x", "author": "ai"},
        )
        assert declared.status_code == 422  # the web is a person: no author to declare
    done = browser.post(
        f"/items/{item.id}/note", data={"csrf": csrf_of(page), "body": "asked <b>ops</b> first"}
    )
    assert done.status_code == 303
    after = browser.get(done.headers["location"]).text
    assert 'data-testid="flash-outcome">applied<' in after
    assert 'data-testid="item-state">awaiting_approval<' in after
    assert 'data-testid="note-body">asked &lt;b&gt;ops&lt;/b&gt; first<' in after
    assert 'data-testid="event-author">(human)<' in after
    assert 'data-testid="event-author">(automation)<' in after
    viewer = sign_in(live, demo.tokens["dana"]).get(f"/items/{item.id}").text
    assert 'data-testid="action-note"' not in viewer


def test_notes_on_both_stores_leave_verify_clean(
    demo_url: str, tmp_path: Path, start_server: Callable[..., Server]
) -> None:
    demo = add_tokens(Demo(demo_url))
    server = start_server(demo.url)
    item = demo.item(SEARCH)
    with server.client(demo.tokens["carol"]) as c:
        for n, author in enumerate(({"kind": "human"}, AI, {"kind": "automation"})):
            body = {"body": f"note {n}", "author": author, "idempotency_key": f"k{n}"}
            assert c.post(f"/api/items/{item.id}/note", json=body).status_code == 200
    store = open_store(demo.url)
    try:
        events = store.history(item.id)
        assert [e.detail["author"]["kind"] for e in events[-3:]] == ["human", "ai", "automation"]
        assert verify_store(store).findings == []
    finally:
        store.close()
