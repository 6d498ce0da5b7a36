"""The notifier: it fills the outbox from the event log and delivers what is due.

One loop, whoever hosts it: ``stopline run`` and ``stopline serve`` both start a
:class:`NotifierThread` when endpoints are configured (:meth:`NotifySettings.from_env`), and
:func:`notify_pending` runs one round from anywhere else (cron, a test). Each message is
leased by the outbox while it is being sent, so any number of hosts may run notifiers on one
database: a message is sent by one of them at a time, and its outcome recorded once. The retry
rule is the outbox's (:func:`stopline.store.outbox.after_attempt`) with the settings'
:class:`~stopline.runtime.notify_settings.RetrySchedule`.

Trust: a notifier sends only to the endpoints of its own settings (never to a URL it read
from the database) and builds every message from the item's history after checking its seal
(never from text stored in the outbox). A message whose item does not verify is not sent.

A notification never touches an item. A receiver that is down delays only its own messages;
one that answers ``410 Gone`` is disabled (``stopline workers`` and ``/metrics`` show it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from ..clock import Clock, utcnow
from ..core.integrity import head_findings
from ..core.states import STOP_STATES
from ..core.verify import verify_item
from ..store import Store, open_store
from ..store.errors import connection_errors
from ..store.outbox import DELIVERED, FAILED, AttemptResult, Notification, message_id
from ..views import why
from . import tracing, webhooks
from .notify_attempt import MAX_ERROR, post, send_mail, within
from .notify_settings import (
    DEFAULT_BASE_URL,
    EMAIL,
    ENV_BASE_URL,
    ENV_INTERVAL,
    ENV_SECRET,
    ENV_WEBHOOKS,
    SLACK,
    Endpoint,
    NotifySettings,
    NotifySettingsError,
    RetrySchedule,
    mail_address,
    parse_webhook_urls,
    positive_number,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_RETRY",
    "ENV_BASE_URL",
    "ENV_INTERVAL",
    "ENV_SECRET",
    "ENV_WEBHOOKS",
    "Notifier",
    "NotifierFailed",
    "NotifierThread",
    "NotifySettings",
    "NotifySettingsError",
    "Summary",
    "hosted",
    "notify_pending",
    "parse_webhook_urls",
    "positive_number",
]

log = logging.getLogger("stopline.notify")

DEFAULT_RETRY = RetrySchedule()
LOOKBACK = timedelta(minutes=10)  # events committed out of time order are still seen


class NotifierFailed(RuntimeError):
    """The notifier's loop stopped on an error it does not know how to wait out."""


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
        self.endpoints: dict[str, Endpoint] = {e.url: e for e in settings.endpoints()}

    def body(self, message: Notification, endpoint: Endpoint) -> tuple[bytes, str] | str:
        """``(body, email subject)`` of ``message`` for ``endpoint``, built from the item's
        history once its seal verifies; a string says why it may not be sent. The row's id is
        sent (``webhook-id``, the email's ``Message-ID``), so it must be the one derived from
        its item, event and URL: any other is a row no notifier made (a header in it, or a
        message sent again under an id its receiver never saw)."""
        item = self.store.get(message.item_id)
        if item is None:
            return "the item is not in the store"
        history = self.store.history(item.id)
        legacy = self.store.legacy_seals().get(item.id)
        head = history[-1] if history else None
        sealed = legacy[1] if legacy and head is not None and legacy[0] == head.hash else None
        found = verify_item(item, history) + head_findings(item, head, sealed)
        if found:
            return f"the item does not verify: {found[0].text()}"[:MAX_ERROR]
        if not 1 <= message.seq <= len(history):
            return f"the item has no event {message.seq}"
        event = history[message.seq - 1]
        if event.to_state not in STOP_STATES or event.from_state == event.to_state:
            return f"event {message.seq} of the item is not a stop"
        if message.id != message_id(message.item_id, message.seq, message.url):
            return "its id is not the one derived from its item, event and URL"
        data = webhooks.facts(item, event, why(item), self.settings.base_url)
        if endpoint.format == SLACK:
            return webhooks.slack_body(data), ""
        if endpoint.format == EMAIL:
            subject, text = webhooks.email_text(data)
            return text.encode("utf-8"), subject
        return webhooks.standard_body(data), ""

    def send(self, message: Notification, now: datetime) -> AttemptResult:
        """One attempt of ``message`` (signed at ``now``), to its configured endpoint only."""
        endpoint = self.endpoints.get(message.url)
        if endpoint is None:  # claims name the configured URLs: fail closed all the same
            return AttemptResult(None, "the endpoint is not configured here", final=True)
        built = self.body(message, endpoint)
        if isinstance(built, str):
            log.error("notification %s not sent: %s", message.id, built)
            return AttemptResult(None, f"not sent: {built}", final=True)
        body, subject = built
        timeout = self.settings.timeout
        if endpoint.format == EMAIL:
            smtp = self.settings.smtp
            address = mail_address(endpoint.url)
            assert smtp is not None and address is not None  # checked by the settings
            text = body.decode("utf-8")
            attempt = partial(send_mail, smtp, address, subject, text, message.id, timeout)
        else:
            signed = webhooks.headers(endpoint.secret, message.id, now, body)
            attempt = partial(post, endpoint.url, body, signed, timeout)
        return within(self.settings.attempt_deadline, attempt)

    def enqueue(self, now: datetime) -> int:
        """Add a message per (new stop event, endpoint); returns how many were added."""
        s = self.settings
        outbox = self.store.outbox
        disabled = {d.url for d in outbox.disabled_endpoints()}
        batch = outbox.new_stops(now, s.backfill, LOOKBACK)
        messages = [
            m
            for e in batch.events
            for m in webhooks.messages(
                e, [x for x in s.endpoints_for(e.automation) if x.url not in disabled], s.base_url
            )
        ]
        return outbox.enqueue(batch, messages, now)

    def deliver(self, clock: Clock, stop: Callable[[], bool] = lambda: False) -> Summary:
        """Send due messages one at a time, each under its own lease, until none is due."""
        summary = Summary()
        outbox = self.store.outbox
        urls = sorted(self.endpoints)
        while not stop():
            now = clock()
            claimed = outbox.claim_next(now, self.settings.lease_seconds, urls)
            if claimed is None:
                break
            with tracing.span("stopline.notify", item=claimed.item_id, endpoint=claimed.url):
                result = self.send(claimed, now)
            recorded = outbox.record_attempt(claimed, result, clock(), self.settings.retry)
            fields = {
                "item": claimed.item_id,
                "notification": claimed.id,
                "endpoint": claimed.url,
                "attempt": claimed.attempts + 1,
                "status_code": result.status_code,
                "outcome": None if recorded is None else recorded.status,
            }
            if recorded is None:
                summary.lost += 1
                log.warning("lease on %s ran out before its outcome was recorded", claimed.id)
            elif recorded.status == DELIVERED:
                summary.delivered += 1
                log.info("notification %s delivered", claimed.id, extra=fields)
            elif recorded.status == FAILED:
                summary.failed += 1
                if result.disable:
                    log.error("endpoint %s answered 410 Gone: disabled", claimed.url, extra=fields)
                log.warning(
                    "notification %s failed for good: %s", claimed.id, result.error, extra=fields
                )
            else:
                summary.retrying += 1
                log.info(
                    "notification %s attempt failed (%s); retrying at %s",
                    claimed.id,
                    result.error,
                    recorded.next_attempt_at.isoformat(),
                    extra=fields,
                )
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
