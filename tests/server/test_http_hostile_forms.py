"""Hostile bytes and headers on the web inbox: a form that is not what a page sends is 422 and
writes nothing (the JSON API refuses the same bytes), a proxy identity header sent twice names
nobody, and a request's path cannot add a line to the access log."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from helpers import in_thread
from stopline.http.access_log import AccessLog

from .conftest import Demo, add_tokens
from .httphelp import Server, csrf_of, nothing_written, sign_in

MSG_1041 = "support-triage/msg-1041"
BILLING = "service-health/billing-api"
URLENCODED = {"content-type": "application/x-www-form-urlencoded"}


def test_a_form_whose_text_is_not_utf8_is_422_and_writes_nothing(demo: Demo, live: Server) -> None:
    item = demo.item(MSG_1041)
    alice = sign_in(live, demo.tokens["alice"])
    token = csrf_of(alice.get(f"/items/{item.id}").text)
    multipart = (
        f'--XX\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n{token}\r\n'
        '--XX\r\nContent-Disposition: form-data; name="body"\r\n\r\n'
    ).encode() + b"caf\xe9 \xff\r\n--XX--\r\n"
    with nothing_written(demo.url):
        for raw, headers in (
            (f"csrf={token}&body=%FF%FEabc".encode(), URLENCODED),  # not UTF-8
            (f"csrf={token}&body=%ED%A0%80".encode(), URLENCODED),  # a lone surrogate
            (f"csrf={token}&body=".encode() + b"caf\xc3\xa9", URLENCODED),  # not percent-encoded
            (multipart, {"content-type": "multipart/form-data; boundary=XX"}),
        ):
            response = alice.post(f"/items/{item.id}/note", content=raw, headers=headers)
            assert response.status_code == 422, response.text
            assert "Nothing was done" in response.text
        page = alice.get("/inbox").text
        response = alice.post(
            "/inbox/bulk",
            content=f"csrf={csrf_of(page)}&command=close&item={item.id}&reason=%FF".encode(),
            headers=URLENCODED,
        )
        assert response.status_code == 422, response.text
    # the same text, well formed, is written as it was typed
    response = alice.post(
        f"/items/{item.id}/note",
        content=f"csrf={token}&body=caf%C3%A9".encode(),
        headers=URLENCODED,
    )
    assert response.status_code == 303, response.text
    with live.client(demo.tokens["alice"]) as api:
        events = api.get(f"/api/items/{item.id}/history").json()["events"]
    assert events[-1]["detail"]["body"] == "café"


@pytest.mark.parametrize("typed", ["1_0", "\u0661", "\u00b2", "0x3", "1e1"])
def test_a_number_in_a_form_is_ascii_digits_or_422(demo: Demo, live: Server, typed: str) -> None:
    item = demo.item(BILLING)
    assert item.state.value == "exhausted"
    alice = sign_in(live, demo.tokens["alice"])
    token = csrf_of(alice.get(f"/items/{item.id}").text)
    with nothing_written(demo.url):
        response = alice.post(
            f"/items/{item.id}/resume", data={"csrf": token, "reason": "more", "attempts": typed}
        )
        assert response.status_code == 422, response.text
        assert "attempts must be an integer" in response.text


def test_a_proxy_header_sent_twice_names_nobody(
    demo: Demo, start_server: Callable[..., Server]
) -> None:
    """A proxy that adds its header after one the client sent must not let the client's win."""
    proxied = start_server(demo.url, STOPLINE_TRUST_PROXY_HEADER="X-Remote-User")
    once = httpx.get(f"{proxied.base}/inbox", headers=[("X-Remote-User", "alice")])
    assert once.status_code == 200 and 'data-testid="whoami-name">alice<' in once.text
    for names in (("alice", "dana"), ("dana", "alice"), ("alice", "alice")):
        twice = httpx.get(
            f"{proxied.base}/inbox", headers=[("X-Remote-User", name) for name in names]
        )
        assert twice.status_code == 303, names  # signed out: sent to /signin


def test_a_path_cannot_add_a_line_to_the_access_log(caplog: pytest.LogCaptureFixture) -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    forged = "/x\nINFO:stopline.http.access:POST /items/itm_1/approve 303 1.0ms\r\x1b[2K"
    scope: dict[str, Any] = {"type": "http", "method": "GET", "path": forged, "headers": []}

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        pass

    with caplog.at_level(logging.INFO, logger="stopline.http.access"):
        in_thread(asyncio.run, AccessLog(app)(scope, receive, send))
    (record,) = [r for r in caplog.records if r.name == "stopline.http.access"]
    line = record.getMessage()
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert line.startswith("GET /x\\nINFO:") and line.endswith(" 404 " + line.split()[-1])
    assert record.__dict__["path"] == forged  # the JSON field keeps the path as it was


def test_a_next_item_cursor_that_cannot_be_an_item_id_is_no_cursor(
    demo_url: str, start_server: Callable[..., Server]
) -> None:
    """Not a 500 from the database (PostgreSQL refuses text holding NUL): the first item."""
    demo = add_tokens(Demo(demo_url))
    server = start_server(demo.url)
    browser = sign_in(server, demo.tokens["alice"])
    first = browser.get("/inbox/next")
    assert first.status_code == 303 and first.headers["location"].startswith("/items/itm_")
    for after in ("a\x00", "\x00", "x" * 300, "a/b"):
        response = browser.get("/inbox/next", params={"after": after})
        assert response.status_code == 303, (after, response.text)
        assert response.headers["location"] == first.headers["location"]
