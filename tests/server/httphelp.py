"""Helpers of the HTTP suite: the one launcher of a real ``stopline serve`` and its handle,
signing in like a browser, the "nothing was written" check, and an item page rendered
without a server."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from itsdangerous import TimestampSigner, URLSafeTimedSerializer

from helpers import dump
from proc import free_port
from stopline.controller import Controller
from stopline.store import open_store

CLEAN_ENV = re.compile(r"^STOPLINE_(?!DEMO_DRAFTS)")


def server_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not CLEAN_ENV.match(k)}
    return {**env, **extra}


@dataclass
class Server:
    base: str
    process: subprocess.Popen[bytes]
    log: Path

    def client(self, token: str | None = None, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base, headers=headers, timeout=20, **kwargs)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def start_serve(
    args: list[str], *, env: dict[str, str], folder: Path, ready_path: str = ""
) -> Server:
    """``stopline ARGS --port PORT`` on a free loopback port, its output in
    ``FOLDER/serve-PORT.log``; returns once it answers ``/openapi.json`` (or, with
    ``ready_path``, once that path answers at all). Stopped again if it never does."""
    port = free_port()
    log = folder / f"serve-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "stopline.cli.main", *args, "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + 90  # a bound on a hang, not on speed
        while True:
            if process.poll() is not None:
                pytest.fail(f"the server exited {process.returncode}: {log.read_text()}")
            try:
                if ready_path:
                    httpx.get(f"{server.base}{ready_path}", timeout=2)
                    return server
                if httpx.get(f"{server.base}/openapi.json", timeout=2).status_code == 200:
                    return server
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the server did not answer: {log.read_text()}")
            time.sleep(0.1)
    except BaseException:
        server.stop()
        raise


CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "no CSRF token on the page"
    return found.group(1)


def sign_in(server: Server, token: str) -> httpx.Client:
    """A browser-like client signed in with ``token`` (cookies kept)."""
    client = server.client()
    page = client.get("/signin")
    response = client.post("/signin", data={"csrf": csrf_of(page.text), "token": token})
    assert response.status_code == 303, response.text
    return client


@contextmanager
def nothing_written(url: str) -> Iterator[None]:
    """Every table but ``refusals`` is exactly the same after the block as before it."""
    store = open_store(url)
    try:
        before = dump(store)
        yield
        after = dump(store)
    finally:
        store.close()
    assert after == before, "something was written"


def actor_with_token(url: str, name: str, roles: list[str]) -> str:
    """Register ``name`` with ``roles`` and issue it an API token (returned)."""
    store = open_store(url)
    try:
        controller = Controller(store)
        controller.add_actor(name, roles)
        token = controller.new_token(name)
        assert token is not None
        return token
    finally:
        store.close()


def signed_session(secret: str, doc: Any, hours_ago: float = 0.0) -> str:
    """A session cookie holding ``doc`` as a server with ``secret`` signs one, dated
    ``hours_ago`` (as if kept in a browser, or stolen, that long ago)."""

    class Then(TimestampSigner):
        def get_timestamp(self) -> int:
            return int(time.time() - hours_ago * 3600)

    sessions = URLSafeTimedSerializer(
        secret,
        salt="stopline:session",
        signer=Then,
        signer_kwargs={"key_derivation": "hmac", "digest_method": hashlib.sha256},
    )
    return str(sessions.dumps(doc))


def bulk(browser: httpx.Client, **data: Any) -> httpx.Response:
    """The inbox's bulk form, posted with the inbox page's CSRF token."""
    page = browser.get("/inbox").text
    return browser.post("/inbox/bulk", data={"csrf": csrf_of(page), **data})


def item_html(page: dict[str, Any], actor: Any) -> str:
    """The item page's template rendered from ``present.item_page``'s model, no server."""
    from stopline.web.page import ENV

    return ENV.get_template("item.html").render(
        csrf="t", actor=actor, via="session", read_only=False, proxy_header=None, mode="plain",
        speaks_as=None, refusal=None, problems=[], filters_query="", flash=None, **page,
    )  # fmt: skip
