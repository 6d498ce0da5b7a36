"""The body limit and the security headers (``server/guard.py``), driven as ASGI directly: the
exact boundaries, and a Content-Length no real client sends (uvicorn answers 400 for it
before the application is called, so only this level shows what the guard does with it)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.types import Message, Receive, Scope, Send

from helpers import in_thread
from stopline.server.guard import SECURITY_HEADERS, Guard

LIMIT = 100


class Echo:
    """An application that reads the whole body and answers with its length."""

    def __init__(self, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        self.headers = headers or []
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = bool(message.get("more_body"))
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": self.headers})
        await send({"type": "http.response.body", "body": str(len(body)).encode()})


def call(
    app: Echo,
    chunks: list[bytes],
    *,
    path: str = "/api/items/x/close",
    declared: bytes | None = None,
) -> tuple[int, dict[bytes, list[bytes]], bytes]:
    """Send ``chunks`` as one request through the guard; the status, headers and body."""
    headers = [] if declared is None else [(b"content-length", declared)]
    scope: dict[str, Any] = {"type": "http", "path": path, "headers": headers}
    incoming = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    in_thread(asyncio.run, Guard(app, LIMIT)(scope, receive, send))
    start, body = sent[0], b"".join(m.get("body", b"") for m in sent[1:])
    found: dict[bytes, list[bytes]] = {}
    for name, value in start["headers"]:
        found.setdefault(name, []).append(value)
    return start["status"], found, body


def test_a_body_of_exactly_the_limit_is_read_whole() -> None:
    app = Echo()
    body = b"x" * LIMIT
    assert call(app, [body], declared=str(LIMIT).encode())[0] == 200
    assert call(app, [body[:40], body[40:70], body[70:]])[0] == 200
    assert app.bodies == [body, body]


def test_one_byte_over_the_limit_is_refused_before_the_application_sees_it() -> None:
    app = Echo()
    body = b"x" * (LIMIT + 1)
    declared = call(app, [body], declared=str(LIMIT + 1).encode())
    chunked = call(app, [body[:60], body[60:]])
    assert declared[0] == chunked[0] == 413
    assert app.bodies == []
    assert json.loads(declared[2])["error"] == "too_large"


def test_a_content_length_that_is_no_number_is_refused() -> None:
    app = Echo()
    for declared in (b"ten", b"", b"1e2", b"0x10"):
        status, _, _ = call(app, [b"{}"], declared=declared)
        assert status == 413, declared
    assert app.bodies == []


def test_the_refusal_closes_the_connection_and_carries_the_security_headers() -> None:
    for path, kind in (("/api/items/x/close", b"application/json"), ("/items/x/close", None)):
        status, headers, body = call(Echo(), [b"x" * (LIMIT + 1)], path=path)
        assert status == 413
        assert headers[b"connection"] == [b"close"]
        assert headers[b"content-length"] == [str(len(body)).encode()]
        for name, value in SECURITY_HEADERS:
            assert headers[name] == [value]
        if kind is None:
            assert headers[b"content-type"][0].startswith(b"text/plain")
            assert b"nothing was done" in body
        else:
            assert headers[b"content-type"] == [kind]


def test_every_response_gets_each_security_header_once_and_keeps_its_own() -> None:
    own = (b"cache-control", b"max-age=60")
    status, headers, _ = call(Echo([own]), [b"{}"])
    assert status == 200
    assert headers[b"cache-control"] == [b"max-age=60"]
    for name, value in SECURITY_HEADERS:
        if name != b"cache-control":
            assert headers[name] == [value]
