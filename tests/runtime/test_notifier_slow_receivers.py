"""A webhook receiver that answers a byte at a time cannot hold the notifier.

The timeout of a connect or a read bounds each wait for the receiver, not the attempt: a
receiver that sends its answer slowly, each byte well within that timeout, kept one attempt
(and the notifier's thread, and ``stopline run --once``, which waits for its last round)
going for as long as it liked. An attempt now has a deadline as a whole (three times the
timeout); past it the attempt is a failure to retry.

The receiver here sends a byte every 50 ms for up to two minutes, so no wait for one byte
comes near the timeout of 3 s however loaded the machine is. Over HTTPS it sends its TLS
handshake so: Python's ``ssl`` bounds a handshake as a whole by the socket's timeout, so that
attempt fails at the timeout, within the deadline.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from helpers import stop_in_exception
from proc import wait_for
from stopline.runtime.notifier import Notifier, NotifySettings
from stopline.store import Store
from webhook_receiver import SECRET

TIMEOUT = 3.0
DRIP = 0.05  # seconds between two bytes of the answer
LONGEST = 120.0  # the receiver gives up after this long


# A TLS record header announcing a handshake message of 16 KiB: a client reads on, byte by
# byte, for the rest of a ServerHello that never ends.
HANDSHAKE = b"\x16\x03\x03\x40\x00" + b"\x00" * 100_000


class Dripping:
    """An HTTP server that reads a request and answers it one byte every ``DRIP`` seconds
    (``tls``: an HTTPS server that reads the client's hello and answers its handshake so)."""

    def __init__(self, tls: bool = False) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.server.getsockname()[1]}/hook"
        self.answer = HANDSHAKE if tls else b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"." * 100_000
        self.done = threading.Event()
        self.cut = threading.Event()  # the notifier closed the connection mid-answer
        self.requests = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.done.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.requests += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)  # the request, or the client's hello (small: one message)
            answer = self.answer
            for n in range(int(LONGEST / DRIP)):
                if self.done.wait(DRIP):
                    return
                try:
                    conn.sendall(answer[n : n + 1])
                except OSError:
                    self.cut.set()
                    return

    def close(self) -> None:
        self.done.set()
        self.server.close()


@pytest.fixture(params=["http", "https"])
def dripping(request: pytest.FixtureRequest) -> Iterator[Dripping]:
    server = Dripping(tls=request.param == "https")
    yield server
    server.close()


def test_a_receiver_that_answers_a_byte_at_a_time_is_a_failed_attempt(
    store: Store, dripping: Dripping
) -> None:
    settings = NotifySettings(
        webhooks={"*": (dripping.url,)}, secret=SECRET, timeout=TIMEOUT, backfill=60.0
    )
    assert settings.attempt_deadline == 3 * TIMEOUT
    stop_in_exception(store, "k", datetime.now(UTC) - timedelta(seconds=5))
    summary = Notifier(store, settings).round()
    assert (summary.enqueued, summary.retrying, summary.delivered) == (1, 1, 0)
    assert dripping.requests == 1
    [message] = store.outbox.notifications()
    assert message.status == "pending"
    if dripping.url.startswith("https"):  # a handshake is bounded as a whole by the timeout
        assert (message.last_error or "").startswith("TimeoutError")
        assert "handshake" in (message.last_error or "")
    else:
        assert message.last_error == f"no whole answer within {3 * TIMEOUT:g} s"


def test_an_attempt_past_its_deadline_lets_go_of_the_receiver(
    store: Store, dripping: Dripping
) -> None:
    """Past the deadline the attempt's connection is cut, so its thread ends: it used to be
    left reading the drip for as long as the receiver liked (a receiver answering every attempt
    so kept one thread and one socket more, without end), and over HTTPS a handshake sent so
    was not cut at all (the connection was known to the attempt only once it was made)."""
    settings = NotifySettings(
        webhooks={"*": (dripping.url,)}, secret=SECRET, timeout=TIMEOUT, backfill=60.0
    )
    stop_in_exception(store, "k", datetime.now(UTC) - timedelta(seconds=5))
    summary = Notifier(store, settings).round()
    assert (summary.retrying, dripping.requests) == (1, 1)
    wait_for(dripping.cut.is_set, 30, "the notifier to close its connection to the receiver")
