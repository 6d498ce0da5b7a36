"""One attempt to send a notification: an HTTP POST or an email, within a deadline as a whole.

The notifier (``notifier.py``) decides what to send and records how each attempt went; this is
the attempt itself. The timeout of a connect or a read bounds each wait for the receiver; the
attempt's deadline (:func:`within`) bounds the whole, so that no receiver can hold a notifier,
and past it cuts the attempt's connections, so that no receiver holds its thread either.
"""

from __future__ import annotations

import contextlib
import http.client
import smtplib
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from email.message import EmailMessage
from http.client import HTTPException
from typing import Any

from ..store.outbox import AttemptResult
from .notify_settings import SMTPSettings

MAX_ERROR = 500
GONE = 410


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer that is not 2xx: it is recorded, never followed (followed, a
    POST would become a GET without its body, and a 2xx there be taken for its delivery)."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


class Connections:
    """The sockets one attempt opened: :meth:`cut` shuts them (and any opened after it), so
    that a read the attempt's thread is waiting in ends at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._cut = False

    def add(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            if not self._cut:
                return
        _shut(sock)

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # the plain socket's shutdown, also under TLS
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _held(base: type[http.client.HTTPConnection], held: Connections) -> Any:
    """``base`` whose connections are added to ``held`` once connected."""

    class Held(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            super().connect()
            held.add(self.sock)

    return Held


class _HTTP(urllib.request.HTTPHandler):
    def __init__(self, held: Connections) -> None:
        super().__init__()
        self.held = held

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_held(http.client.HTTPConnection, self.held), req)


class _HTTPS(urllib.request.HTTPSHandler):
    def __init__(self, held: Connections) -> None:
        super().__init__()
        self.held = held

    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_held(http.client.HTTPSConnection, self.held), req)


def post(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    timeout: float,
    held: Connections | None = None,
) -> AttemptResult:
    """One POST: accepted on any 2xx answer; ``410`` disables the endpoint; anything else is
    an error to retry. Its connections are added to ``held``."""
    request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    held = Connections() if held is None else held
    opener = urllib.request.build_opener(NoRedirect, _HTTP(held), _HTTPS(held))
    try:
        with opener.open(request, timeout=timeout) as response:
            return AttemptResult(int(response.status), None)
    except urllib.error.HTTPError as exc:  # an answer, but not 2xx
        exc.close()
        if exc.code == GONE:
            return AttemptResult(GONE, "HTTP 410 Gone", disable=True)
        return AttemptResult(exc.code, f"HTTP {exc.code}")
    except urllib.error.URLError as exc:  # no answer: refused, unknown host, timeout
        reason = exc.reason
        name = type(reason).__name__ if isinstance(reason, BaseException) else "URLError"
        return AttemptResult(None, f"{name}: {reason}"[:MAX_ERROR])
    except (OSError, HTTPException) as exc:  # the connection broke mid-answer
        return AttemptResult(None, f"{type(exc).__name__}: {exc}"[:MAX_ERROR])


class _SMTP(smtplib.SMTP):
    """An SMTP client whose connection is added to ``held`` before the server's greeting is
    read (``_get_socket`` is where ``smtplib`` opens it, also in ``SMTP_SSL`` and ``LMTP``)."""

    def __init__(self, held: Connections, host: str, port: int, timeout: float) -> None:
        self.held = held
        super().__init__(host, port, timeout=timeout)

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        sock: socket.socket = super()._get_socket(host, port, timeout)  # type: ignore[misc]
        self.held.add(sock)
        return sock


def send_mail(
    smtp: SMTPSettings,
    to: str,
    subject: str,
    text: str,
    msg_id: str,
    timeout: float,
    held: Connections | None = None,
) -> AttemptResult:
    """One email through the SMTP server: accepted when the server took it for ``to``. Its
    connection is added to ``held``."""
    message = EmailMessage()
    message["From"] = smtp.sender
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = f"<{msg_id}@stopline>"
    message.set_content(text)
    try:
        held = Connections() if held is None else held
        with _SMTP(held, smtp.host, smtp.port, timeout) as client:
            refused = client.send_message(message)
    except smtplib.SMTPResponseException as exc:
        return AttemptResult(exc.smtp_code, f"SMTP {exc.smtp_code}"[:MAX_ERROR])
    except (smtplib.SMTPException, OSError) as exc:
        return AttemptResult(None, f"{type(exc).__name__}: {exc}"[:MAX_ERROR])
    if refused:
        return AttemptResult(None, f"SMTP refused {sorted(refused)}"[:MAX_ERROR])
    return AttemptResult(250, None)


def within(deadline: float, attempt: Callable[[Connections], AttemptResult]) -> AttemptResult:
    """``attempt(held)`` on a thread of its own, waited for at most ``deadline`` seconds. The
    timeout of a connect or a read bounds each wait, not the whole: a receiver that answers a
    byte at a time, each within it, would hold the notifier (and ``stopline run --once``,
    which waits for its last round) for as long as it likes. Past the deadline the attempt is
    a failure to retry, and the connections it added to ``held`` are cut, so that its thread
    ends too (it used to be left reading for as long as the receiver went on)."""
    done: list[AttemptResult] = []
    raised: list[BaseException] = []
    held = Connections()

    def run() -> None:
        try:
            done.append(attempt(held))
        except BaseException as error:  # raised again on the notifier's thread
            raised.append(error)

    thread = threading.Thread(target=run, name="stopline-notify-send", daemon=True)
    thread.start()
    thread.join(deadline)
    if raised:
        raise raised[0]
    if not done:
        held.cut()
        return AttemptResult(None, f"no whole answer within {deadline:g} s")
    return done[0]
