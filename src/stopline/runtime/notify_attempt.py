"""One attempt to send a notification: an HTTP POST or an email, within a deadline as a whole.

The notifier (``notifier.py``) decides what to send and records how each attempt went; this is
the attempt itself. The timeout of a connect or a read bounds each wait for the receiver; the
attempt's deadline (:func:`within`) bounds the whole, so that no receiver can hold a notifier.
"""

from __future__ import annotations

import smtplib
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from email.message import EmailMessage
from http.client import HTTPException

from ..store.outbox import AttemptResult
from .notify_settings import SMTPSettings

MAX_ERROR = 500
GONE = 410


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer that is not 2xx: it is recorded, never followed."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> AttemptResult:
    """One POST: accepted on any 2xx answer; ``410`` disables the endpoint; anything else is
    an error to retry."""
    request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
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


def send_mail(
    smtp: SMTPSettings, to: str, subject: str, text: str, msg_id: str, timeout: float
) -> AttemptResult:
    """One email through the SMTP server: accepted when the server took it for ``to``."""
    message = EmailMessage()
    message["From"] = smtp.sender
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = f"<{msg_id}@stopline>"
    message.set_content(text)
    try:
        with smtplib.SMTP(smtp.host, smtp.port, timeout=timeout) as client:
            refused = client.send_message(message)
    except smtplib.SMTPResponseException as exc:
        return AttemptResult(exc.smtp_code, f"SMTP {exc.smtp_code}"[:MAX_ERROR])
    except (smtplib.SMTPException, OSError) as exc:
        return AttemptResult(None, f"{type(exc).__name__}: {exc}"[:MAX_ERROR])
    if refused:
        return AttemptResult(None, f"SMTP refused {sorted(refused)}"[:MAX_ERROR])
    return AttemptResult(250, None)


def within(deadline: float, attempt: Callable[[], AttemptResult]) -> AttemptResult:
    """``attempt()`` on a thread of its own, waited for at most ``deadline`` seconds. The
    timeout of a connect or a read bounds each wait, not the whole: a receiver that answers a
    byte at a time, each within it, would hold the notifier (and ``stopline run --once``,
    which waits for its last round) for as long as it likes. Past the deadline the attempt is
    a failure to retry, and its thread is left to end alone."""
    done: list[AttemptResult] = []
    raised: list[BaseException] = []

    def run() -> None:
        try:
            done.append(attempt())
        except BaseException as error:  # raised again on the notifier's thread
            raised.append(error)

    thread = threading.Thread(target=run, name="stopline-notify-send", daemon=True)
    thread.start()
    thread.join(deadline)
    if raised:
        raise raised[0]
    if not done:
        return AttemptResult(None, f"no whole answer within {deadline:g} s")
    return done[0]
