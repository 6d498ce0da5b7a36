"""A webhook receiver written from docs/webhooks.md alone, shared by the server and runtime
suites: a real HTTP server on a loopback port that records what it got."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SECRET = "whsec_" + base64.b64encode(b"a test secret of 32 bytes, fine!").decode()


def verify(secret: str, headers: dict[str, str], body: bytes, tolerance: int = 300) -> bool:
    """Exactly the verifier of docs/webhooks.md."""
    key = (
        base64.b64decode(secret.removeprefix("whsec_"))
        if secret.startswith("whsec_")
        else secret.encode()
    )
    msg_id, ts = headers["webhook-id"], headers["webhook-timestamp"]
    if abs(time.time() - int(ts)) > tolerance:
        return False
    expected = base64.b64encode(
        hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    ).decode()
    return any(
        version == "v1" and hmac.compare_digest(sig, expected)
        for version, _, sig in (
            part.partition(",") for part in headers["webhook-signature"].split()
        )
    )


class Receiver:
    """A webhook receiver on a loopback port; ``status`` is what it answers (with a
    ``location`` header when given).

    With ``hold_first``, the first request is recorded at once but answered only after
    :meth:`release` (so a test can act while one delivery is in flight).
    """

    def __init__(
        self, status: int = 204, *, hold_first: bool = False, location: str | None = None
    ) -> None:
        self.status = status
        self.received: list[tuple[dict[str, str], bytes]] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        if not hold_first:
            self._released.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                with receiver._lock:
                    receiver.received.append(
                        ({k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    first = len(receiver.received) == 1
                if first:
                    receiver._released.wait(60)
                self.send_response(receiver.status)
                if location is not None:
                    self.send_header("location", location)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def release(self) -> None:
        self._released.set()

    def count(self) -> int:
        with self._lock:
            return len(self.received)

    def messages(self, secret: str = SECRET) -> list[dict[str, Any]]:
        """Every body received, parsed after its signature verified."""
        out = []
        with self._lock:
            received = list(self.received)
        for headers, body in received:
            assert verify(secret, headers, body), "a signature did not verify"
            out.append(json.loads(body))
        return out

    def ids(self) -> list[str]:
        with self._lock:
            return [headers["webhook-id"] for headers, _ in self.received]

    def close(self) -> None:
        self._released.set()
        self.server.shutdown()
        self.server.server_close()
