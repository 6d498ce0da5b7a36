"""A real HTTP server in front of a WebDAV server that forwards every request, except those a
test asks it to treat otherwise: answer itself, forward altered, or do something first (delete
the resource on the server's disk, say). It stands for the servers and the races WsgiDAV alone
never shows: a server that ignores ``If-None-Match``, one without ``LOCK``, a resource deleted
between two requests of one update."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

METHODS = ("GET", "HEAD", "PUT", "DELETE", "LOCK", "UNLOCK", "PROPFIND", "OPTIONS")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Answer:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


# A rule sees each request (with how many of its method came before it) and returns an Answer
# to send instead of forwarding, a Request to forward instead, or None to forward it as it is.
Rule = Callable[[Request, int], "Answer | Request | None"]


@dataclass
class Interposer:
    upstream: str  # the WebDAV server's base URL, ending in "/"
    port: int = 0
    rules: list[Rule] = field(default_factory=list)
    seen: list[Request] = field(default_factory=list)  # every request, as received

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def forward(self, request: Request) -> Answer:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        with httpx.Client(trust_env=False, timeout=10.0) as client:
            response = client.request(
                request.method,
                self.upstream.rstrip("/") + request.path,
                headers=headers,
                content=request.body,
            )
        kept = {k: v for k, v in response.headers.items() if k.lower() not in HOP_BY_HOP}
        kept.pop("content-encoding", None)  # httpx gives the body decoded
        return Answer(response.status_code, kept, response.content)

    def answer(self, request: Request) -> Answer:
        count = sum(1 for r in self.seen if r.method == request.method)
        self.seen.append(request)
        for rule in self.rules:
            outcome = rule(request, count)
            if isinstance(outcome, Answer):
                return outcome
            if isinstance(outcome, Request):
                request = outcome
        return self.forward(request)


def _handler(proxy: Interposer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            request = Request(self.command, self.path, dict(self.headers.items()), body)
            answer = proxy.answer(request)
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer.body)

    for method in METHODS:
        setattr(Handler, f"do_{method}", Handler._any)
    return Handler


@contextmanager
def interposed(upstream: str, *rules: Rule) -> Iterator[Interposer]:
    """An :class:`Interposer` serving on a loopback port while the block runs."""
    proxy = Interposer(upstream, rules=list(rules))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
    proxy.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
