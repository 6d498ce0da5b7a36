"""The webhook notifier: it fills the outbox from the event log and delivers what is due.

One loop, whoever hosts it: ``stopline run`` and ``stopline serve`` both start a
:class:`NotifierThread` when webhooks are configured (:meth:`NotifySettings.from_env`), and
:func:`notify_pending` runs one round from anywhere else (cron, a test). Each message is
leased by the outbox while it is being sent, so any number of hosts may run notifiers on one
database: a message is sent by one of them at a time, and its outcome recorded once. The retry
rule is the outbox's (:func:`stopline.store.outbox.after_attempt`) with :data:`DEFAULT_RETRY`.

A notification never touches an item. A receiver that is down delays only its own messages.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.client import HTTPException
from urllib.parse import urlsplit

from ..clock import Clock, utcnow
from ..core.policy import RetryPolicy
from ..store import Store, open_store
from ..store.errors import connection_errors
from ..store.outbox import DELIVERED, FAILED, AttemptResult, Notification
from . import webhooks

log = logging.getLogger("stopline.notify")

ENV_WEBHOOKS = "STOPLINE_WEBHOOKS"
ENV_SECRET = "STOPLINE_WEBHOOK_SECRET"
ENV_BASE_URL = "STOPLINE_BASE_URL"
ENV_INTERVAL = "STOPLINE_NOTIFY_INTERVAL"
DEFAULT_BASE_URL = "http://127.0.0.1:8420"  # where `stopline serve` listens by default
# At most 5 attempts, 10 s, 20 s, 40 s and 80 s apart.
DEFAULT_RETRY = RetryPolicy(max_attempts=5, base_delay=10.0, backoff=2.0, max_delay=3600.0)
LOOKBACK = timedelta(minutes=10)  # events committed out of time order are still seen
MAX_ERROR = 500


class NotifySettingsError(ValueError):
    """The webhook configuration cannot be used."""


class NotifierFailed(RuntimeError):
    """The notifier's loop stopped on an error it does not know how to wait out."""


def parse_webhook_urls(text: str | None) -> dict[str, tuple[str, ...]]:
    """``{"automation": ["https://..."], "*": [...]}`` (``*``: every automation)."""
    if not text or not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotifySettingsError(f"{ENV_WEBHOOKS} is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise NotifySettingsError(f"{ENV_WEBHOOKS} must be a JSON object of automation -> URLs")
    out: dict[str, tuple[str, ...]] = {}
    for name, urls in doc.items():
        if isinstance(urls, str):
            urls = [urls]
        if not isinstance(urls, list) or not all(_is_http_url(u) for u in urls):
            raise NotifySettingsError(f"{ENV_WEBHOOKS}[{name!r}] must be a list of http(s) URLs")
        out[str(name)] = tuple(urls)
    return out


def _is_http_url(value: object) -> bool:
    """An ``http(s)://`` URL with a host (checked here, so no round fails on it later)."""
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        return False
    try:
        return bool(urlsplit(value).hostname)
    except ValueError:  # a malformed host, such as an unclosed [IPv6 address
        return False


def positive_number(env: Mapping[str, str], name: str, default: float) -> float:
    """The number in variable ``name`` (``default`` when unset or blank); it must be > 0."""
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise NotifySettingsError(f"{name} must be a number, not {raw!r}") from exc
    if not (math.isfinite(value) and value > 0):
        raise NotifySettingsError(f"{name} must be positive (and finite)")
    return value


@dataclass(frozen=True)
class NotifySettings:
    """What a notifier sends, where, and how often it looks."""

    webhooks: Mapping[str, tuple[str, ...]]  # automation (or "*") -> URLs
    secret: str  # signs every message (whsec_<base64>, or used as it is)
    base_url: str = DEFAULT_BASE_URL  # the inbox address, for the link in each message
    interval: float = 5.0  # seconds between two rounds
    timeout: float = 5.0  # seconds per connect and per read of one attempt
    retry: RetryPolicy = field(default=DEFAULT_RETRY)
    backfill: float = 0.0  # the first round also sends stops this many seconds old

    def __post_init__(self) -> None:
        if not self.secret:
            raise NotifySettingsError(f"{ENV_WEBHOOKS} needs {ENV_SECRET} (whsec_<base64>)")
        try:
            webhooks.secret_key(self.secret)
        except webhooks.WebhookSecretError as exc:
            raise NotifySettingsError(f"{ENV_SECRET}: {exc}") from exc
        if not _is_http_url(self.base_url):
            raise NotifySettingsError(f"{ENV_BASE_URL} must be an http(s) URL")
        if not (self.interval > 0 and self.timeout > 0 and self.backfill >= 0):
            raise NotifySettingsError("the interval and timeout are positive, backfill >= 0")

    @property
    def lease_seconds(self) -> float:
        """How long a sender holds a message: well past one attempt's connect and read."""
        return 30.0 + 4 * self.timeout

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, base_url: str | None = None
    ) -> NotifySettings | None:
        """The settings ``STOPLINE_WEBHOOKS`` and its companions give, or ``None`` when no
        webhook is configured. ``base_url`` is the default of ``STOPLINE_BASE_URL``."""
        e = os.environ if env is None else env
        hooks = parse_webhook_urls(e.get(ENV_WEBHOOKS))
        if not hooks:
            return None
        return cls(
            webhooks=hooks,
            secret=e.get(ENV_SECRET) or "",
            base_url=(e.get(ENV_BASE_URL) or "").rstrip("/") or base_url or DEFAULT_BASE_URL,
            interval=positive_number(e, ENV_INTERVAL, 5.0),
        )


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer that is not 2xx: it is recorded, never followed."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> AttemptResult:
    """One POST: accepted on any 2xx answer; anything else is an error to retry."""
    request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return AttemptResult(int(response.status), None)
    except urllib.error.HTTPError as exc:  # an answer, but not 2xx
        exc.close()
        return AttemptResult(exc.code, f"HTTP {exc.code}")
    except urllib.error.URLError as exc:  # no answer: refused, unknown host, timeout
        reason = exc.reason
        name = type(reason).__name__ if isinstance(reason, BaseException) else "URLError"
        return AttemptResult(None, f"{name}: {reason}"[:MAX_ERROR])
    except (OSError, HTTPException) as exc:  # the connection broke mid-answer
        return AttemptResult(None, f"{type(exc).__name__}: {exc}"[:MAX_ERROR])


@dataclass
class Summary:
    enqueued: int = 0
    delivered: int = 0
    retrying: int = 0
    failed: int = 0
    lost: int = 0  # leases that ran out before the outcome was recorded


class Notifier:
    """Fills the outbox from the event log and delivers what is due, on one store."""

    def __init__(self, store: Store, settings: NotifySettings, *, clock: Clock = utcnow) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock

    def send(self, message: Notification, now: datetime) -> AttemptResult:
        """One signed attempt of ``message``, signed at ``now``."""
        body = message.payload.encode("utf-8")
        signed = webhooks.headers(self.settings.secret, message.id, now, body)
        return post(message.url, body, signed, self.settings.timeout)

    def enqueue(self, now: datetime) -> int:
        """Add a message per (new stop event, URL); returns how many were added."""
        s = self.settings
        outbox = self.store.outbox
        batch = outbox.new_stops(now, s.backfill, LOOKBACK)
        messages = [m for e in batch.events for m in webhooks.messages(e, s.webhooks, s.base_url)]
        return outbox.enqueue(batch, messages, now)

    def deliver(self, clock: Clock, stop: Callable[[], bool] = lambda: False) -> Summary:
        """Send due messages one at a time, each under its own lease, until none is due."""
        summary = Summary()
        outbox = self.store.outbox
        while not stop():
            now = clock()
            claimed = outbox.claim_next(now, self.settings.lease_seconds)
            if claimed is None:
                break
            result = self.send(claimed, now)
            recorded = outbox.record_attempt(claimed, result, clock(), self.settings.retry)
            if recorded is None:
                summary.lost += 1
                log.warning("lease on %s ran out before its outcome was recorded", claimed.id)
            elif recorded.status == DELIVERED:
                summary.delivered += 1
            elif recorded.status == FAILED:
                summary.failed += 1
                log.warning("webhook %s failed for good: %s", claimed.id, result.error)
            else:
                summary.retrying += 1
        return summary

    def round(
        self, now: datetime | None = None, stop: Callable[[], bool] = lambda: False
    ) -> Summary:
        """Enqueue, then deliver what is due. ``now`` fixes the time of the whole round."""
        clock = self.clock if now is None else (lambda: now)
        added = self.enqueue(clock())
        summary = self.deliver(clock, stop)
        summary.enqueued = added
        return summary


def notify_pending(url: str, settings: NotifySettings, *, now: datetime | None = None) -> Summary:
    """One round on the database at ``url`` (opened and closed here)."""
    store = open_store(url, migrate=False)
    try:
        return Notifier(store, settings).round(now)
    finally:
        store.close()


class NotifierThread:
    """A notifier's loop on a thread of its own, with a store of its own.

    :meth:`start` returns once the store is open and the first round has read the event log,
    so every stop after it is sent. :meth:`stop` ends the loop; with ``flush`` the loop first
    runs one more whole round (``stopline run --once`` delivers what its run stopped).
    A database that is away is waited out; any other error ends the loop, is logged, and is
    raised again by :meth:`stop` as :class:`NotifierFailed`.
    """

    def __init__(self, url: str, settings: NotifySettings, *, migrate: bool = False) -> None:
        self.url = url
        self.settings = settings
        self.migrate = migrate
        self.failure: BaseException | None = None
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._abort = threading.Event()
        self._thread = threading.Thread(target=self._main, name="stopline-notify", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait()
        if self.failure is not None:
            self._thread.join()
            raise NotifierFailed(f"the webhook notifier could not start: {self.failure}")

    def stop(self, *, flush: bool = False) -> None:
        if not flush:
            self._abort.set()
        self._stop.set()
        self._thread.join(None if flush else self.settings.timeout * 2 + 5)
        if self._thread.is_alive():
            log.warning("the webhook notifier is still sending; it is left to finish alone")
        if self.failure is not None:
            raise NotifierFailed(f"the webhook notifier stopped: {self.failure}")

    def _main(self) -> None:
        try:
            store = open_store(self.url, migrate=self.migrate)
        except BaseException as exc:
            self.failure = exc
            self._ready.set()
            return
        try:
            self._loop(Notifier(store, self.settings))
        except BaseException as exc:
            self.failure = exc
            log.exception("the webhook notifier stopped")
        finally:
            self._ready.set()
            store.close()

    def _loop(self, notifier: Notifier) -> None:
        transient = connection_errors()
        backoff = 0.0
        while True:
            stopping = self._stop.is_set()
            try:
                if not self._ready.is_set():
                    notifier.enqueue(notifier.clock())  # the cursor starts before start() returns
                    self._ready.set()
                notifier.round(stop=self._abort.is_set)
                backoff = 0.0
            except transient as exc:  # the database went away: wait, then try again
                backoff = min(max(backoff * 2, 0.5), 30.0)
                log.warning("database unavailable for notifications (%s); retrying", exc)
            if stopping or self._abort.is_set():
                return
            self._stop.wait(backoff or self.settings.interval)


@contextmanager
def hosted(url: str, settings: NotifySettings | None, *, flush: bool) -> Iterator[None]:
    """Run a notifier while the block runs (nothing when ``settings`` is ``None``). With
    ``flush`` a block that ends normally waits for one last whole round."""
    if settings is None:
        yield
        return
    notifier = NotifierThread(url, settings, migrate=True)
    notifier.start()
    try:
        yield
    except BaseException:
        try:
            notifier.stop()
        except NotifierFailed:
            log.warning("the webhook notifier had stopped too", exc_info=True)
        raise
    notifier.stop(flush=flush)
