"""A WebDAV server that answers without end: the target reads at most ``max_response_bytes``
of an answer and spends at most ``total_seconds`` on one, so a hostile or broken server can
neither fill the worker's memory nor keep its thread reading after the call's time is up.
An answer cut off is the server's failure: a plain ``TargetError`` for a read, an unknown
outcome for a request that may have changed the server. Real servers on loopback ports."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from stopline.core.artifacts import Artifact
from stopline.targets.base import OutcomeUnknown, TargetError
from stopline.targets.directory import key_slug
from stopline.targets.webdav import WebDAVTarget
from webdav_proxy import Answer, Interposer, Request, interposed
from webdav_server import DavServer

SMALL = 64 * 1024


def make(body: str = "Body\n") -> Artifact:
    return Artifact(key="k", title="T", summary="S", body=body)


@pytest.fixture
def proxy(dav_server: DavServer) -> Iterator[tuple[Interposer, str]]:
    sub = f"t-{uuid.uuid4().hex[:12]}"
    (dav_server.root / sub).mkdir()
    with interposed(dav_server.url) as p:
        yield p, p.url + sub


def huge(method: str) -> object:
    def rule(request: Request, count: int) -> Answer | None:
        return Answer(200, {}, b"x" * (4 * SMALL)) if request.method == method else None

    return rule


def test_a_read_whose_answer_is_too_long_is_an_error(proxy: tuple[Interposer, str]) -> None:
    p, url = proxy
    with WebDAVTarget(url, trust_env=False, max_response_bytes=SMALL) as target:
        ref = target.create(make(), "long-read")
        assert target.read(ref.remote_id).body == "Body\n"  # within the limit: as always
        p.rules.append(huge("GET"))  # type: ignore[arg-type]
        with pytest.raises(TargetError, match=f"longer than {SMALL} bytes") as info:
            target.read(ref.remote_id)
        assert not isinstance(info.value, OutcomeUnknown)


def test_a_create_whose_answer_is_too_long_is_an_unknown_outcome(
    proxy: tuple[Interposer, str],
) -> None:
    """The PUT was sent and may have taken effect: the next attempt looks before it creates."""
    p, url = proxy
    p.rules.append(huge("PUT"))  # type: ignore[arg-type]
    target = WebDAVTarget(url, trust_env=False, max_response_bytes=SMALL)
    with target, pytest.raises(OutcomeUnknown, match=f"longer than {SMALL} bytes"):
        target.create(make(), "long-put")


class Trickle(BaseHTTPRequestHandler):
    """Answers every GET with a body it never ends: a byte every 10 ms, each well within
    any read timeout, until the client goes away."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while True:
                self.wfile.write(b"1\r\nx\r\n")
                self.wfile.flush()
                time.sleep(0.01)
        except OSError:  # the client hung up
            return


class Quiet(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the client hanging up on an endless answer is the point, not an error


@contextmanager
def trickling() -> Iterator[str]:
    server = Quiet(("127.0.0.1", 0), Trickle)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_an_answer_that_never_ends_is_cut_off() -> None:
    """Before, each byte reset the read timeout and the read went on for as long as the
    server liked. The assertion is on what is raised, not on how soon."""
    with trickling() as url:
        target = WebDAVTarget(url, trust_env=False, total_seconds=0.3)
        with target, pytest.raises(TargetError, match=r"not read within 0\.3 s"):
            target.read(key_slug("endless") + ".json")
