"""What a notifier sends, where, signed with which secret, and how often it tries again.

``STOPLINE_WEBHOOKS`` maps an automation (``"*"``: every automation) to its endpoints. An
endpoint is a URL (signed with ``STOPLINE_WEBHOOK_SECRET``) or an object naming its own
``secret`` and ``format``:

* ``standard``: the Standard Webhooks message (``webhooks.py``), signed with the endpoint's
  secret, which must be ``whsec_`` and the base64 of at least 24 random bytes;
* ``slack``: a Slack-compatible incoming-webhook body (blocks, with the link to the item);
* ``email``: a ``mailto:`` URL, sent through the SMTP server of ``STOPLINE_SMTP_URL``.

Every setting is checked here, so ``run`` and ``serve`` refuse a bad one before they start.
The notifier only ever sends to the endpoints of these settings: an outbox row naming any
other URL is never sent.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import unquote, urlsplit

ENV_WEBHOOKS = "STOPLINE_WEBHOOKS"
ENV_SECRET = "STOPLINE_WEBHOOK_SECRET"
ENV_BASE_URL = "STOPLINE_BASE_URL"
ENV_INTERVAL = "STOPLINE_NOTIFY_INTERVAL"
ENV_RETRY = "STOPLINE_WEBHOOK_RETRY"
ENV_JITTER = "STOPLINE_WEBHOOK_JITTER"
ENV_SMTP = "STOPLINE_SMTP_URL"
ENV_SMTP_FROM = "STOPLINE_SMTP_FROM"
NOTIFY_ENV = (
    ENV_WEBHOOKS,
    ENV_SECRET,
    ENV_INTERVAL,
    ENV_RETRY,
    ENV_JITTER,
    ENV_SMTP,
    ENV_SMTP_FROM,
)
DEFAULT_BASE_URL = "http://127.0.0.1:8420"  # where `stopline serve` listens by default
SECRET_PREFIX = "whsec_"
MIN_SECRET_BYTES = 24  # the Standard Webhooks range is 24 to 64 random bytes
MAX_SECRET_BYTES = 64
STANDARD, SLACK, EMAIL = "standard", "slack", "email"
FORMATS = (STANDARD, SLACK, EMAIL)
EVERY_AUTOMATION = "*"
# The Standard Webhooks schedule: after the first attempt, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h
# and 10 h (eight attempts over about 27 hours), each wait moved by up to 20 % either way.
DEFAULT_SCHEDULE = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0)
DEFAULT_JITTER = 0.2
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


class NotifySettingsError(ValueError):
    """The notification configuration cannot be used."""


class WebhookSecretError(ValueError):
    """A signing secret that cannot sign."""


def secret_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_<base64>`` secret of 24 to 64 bytes; anything else is refused."""
    if not secret:
        raise WebhookSecretError("the webhook secret is empty")
    if not secret.startswith(SECRET_PREFIX):
        raise WebhookSecretError(f"a secret is {SECRET_PREFIX} followed by base64")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except binascii.Error as exc:
        raise WebhookSecretError(f"the part after {SECRET_PREFIX} is not base64: {exc}") from exc
    if not key:
        raise WebhookSecretError(f"the secret has no key after {SECRET_PREFIX}")
    if not MIN_SECRET_BYTES <= len(key) <= MAX_SECRET_BYTES:
        raise WebhookSecretError(
            f"the key is {len(key)} bytes; it must be {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES}"
            f" random bytes (for example {SECRET_PREFIX} + base64 of 32 bytes)"
        )
    return key


def is_http_url(value: object) -> bool:
    """An ``http(s)://`` URL with a host a socket can look up (no empty label, none past 63
    characters) and a port in range, of printable ASCII without a space (an international
    name in its ``xn--`` form) and without ``user:password@``: checked here, as no request
    carries anything else, so no round fails on it later."""
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        return False
    if not (value.isascii() and value.isprintable()) or " " in value:
        return False
    try:
        parts = urlsplit(value)
        if not parts.hostname or "@" in parts.netloc or parts.port == 0:
            return False
        parts.hostname.encode("idna")  # what the socket's lookup raises on
        return True
    except ValueError:  # a malformed host (an unclosed [IPv6 address), a port out of range
        return False


def mail_address(url: str) -> str | None:
    """The address of a ``mailto:`` URL with one plain address, else ``None``."""
    if not url.startswith("mailto:"):
        return None
    address = unquote(url[len("mailto:") :])
    if re.fullmatch(r"[^@\s,<>?]+@[^@\s,<>?]+", address) is None:
        return None
    return address


@dataclass(frozen=True)
class Endpoint:
    """One place messages go: its URL (``mailto:`` for email), format and signing secret."""

    url: str
    format: str = STANDARD
    secret: str | None = field(default=None, repr=False)  # never in a log line

    def check(self, where: str, own_secret: bool = True) -> None:
        if self.format not in FORMATS:
            raise NotifySettingsError(f"{where}: format must be one of {', '.join(FORMATS)}")
        if self.format == EMAIL:
            if mail_address(self.url) is None:
                raise NotifySettingsError(f"{where}: an email endpoint is mailto:ADDRESS")
            return
        if not is_http_url(self.url):
            raise NotifySettingsError(
                f"{where} must be http(s) URLs of printable ASCII (or mailto: for email)"
            )
        if self.format == STANDARD or self.secret is not None:
            try:
                secret_key(self.secret or "")
            except WebhookSecretError as exc:
                source = f"{where}.secret" if own_secret and self.secret else ENV_SECRET
                raise NotifySettingsError(f"{source}: {exc}") from exc


def _endpoint(entry: Any, default_secret: str | None, where: str) -> Endpoint:
    own = isinstance(entry, dict) and "secret" in entry
    if isinstance(entry, str):
        fmt = EMAIL if entry.startswith("mailto:") else STANDARD
        found = Endpoint(entry, fmt, default_secret if fmt == STANDARD else None)
    elif isinstance(entry, Endpoint):
        found = entry
        if found.secret is None and found.format == STANDARD:
            found = Endpoint(found.url, found.format, default_secret)
    elif isinstance(entry, dict) and isinstance(entry.get("url"), str):
        unknown = set(entry) - {"url", "format", "secret"}
        if unknown:
            raise NotifySettingsError(f"{where}: unknown keys {sorted(unknown)}")
        url = entry["url"]
        fmt = entry.get("format") or (EMAIL if url.startswith("mailto:") else STANDARD)
        secret = entry.get("secret")
        if secret is not None and not isinstance(secret, str):
            raise NotifySettingsError(f"{where}.secret must be a string")
        if secret is None and fmt == STANDARD:
            secret = default_secret
        found = Endpoint(url, str(fmt), secret)
    else:
        raise NotifySettingsError(
            f"{where} must be http(s) URLs, or objects with url (and format, secret)"
        )
    found.check(where, own or (isinstance(entry, Endpoint) and entry.secret is not None))
    return found


def parse_endpoints(
    doc: Mapping[str, Any], default_secret: str | None
) -> dict[str, tuple[Endpoint, ...]]:
    """``{"automation": [URL or {url, format, secret}], "*": [...]}``, every entry checked."""
    out: dict[str, tuple[Endpoint, ...]] = {}
    for name, entries in doc.items():
        where = f"{ENV_WEBHOOKS}[{name!r}]"
        if isinstance(entries, str | dict | Endpoint):
            entries = [entries]
        if not isinstance(entries, list | tuple):
            raise NotifySettingsError(f"{where} must be a list of http(s) URLs or endpoints")
        out[str(name)] = tuple(_endpoint(e, default_secret, where) for e in entries)
    return out


def parse_webhook_urls(text: str | None) -> dict[str, Any]:
    """The JSON of ``STOPLINE_WEBHOOKS`` (not yet checked against a secret)."""
    if not text or not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotifySettingsError(f"{ENV_WEBHOOKS} is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise NotifySettingsError(f"{ENV_WEBHOOKS} must be a JSON object of automation -> URLs")
    parse_endpoints(doc, "whsec_" + base64.b64encode(bytes(32)).decode())  # shapes only
    return doc


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


def parse_schedule(text: str) -> tuple[float, ...]:
    """``"5s,5m,30m,2h"``: the waits after attempt 1, 2, ... (units s, m, h, d; s if none)."""
    delays = []
    for part in text.split(","):
        match = _DURATION.match(part)
        if match is None:
            raise NotifySettingsError(f"{ENV_RETRY}: {part.strip()!r} is not a duration like 5m")
        delays.append(float(match.group(1)) * _UNITS[match.group(2) or "s"])
    if not delays or not all(0 < d <= 7 * 86400 for d in delays) or len(delays) > 50:
        raise NotifySettingsError(f"{ENV_RETRY}: 1 to 50 waits, each over 0 and at most 7d")
    return tuple(delays)


@dataclass(frozen=True)
class RetrySchedule:
    """The waits between attempts, each multiplied by a random factor in
    ``[1 - jitter, 1 + jitter]`` so that receivers coming back are not hit all at once."""

    delays: tuple[float, ...] = DEFAULT_SCHEDULE
    jitter: float = DEFAULT_JITTER
    rng: Callable[[], float] = field(default=random.random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.delays or not all(d > 0 for d in self.delays):
            raise NotifySettingsError("a retry schedule has at least one positive wait")
        if not 0 <= self.jitter < 1:
            raise NotifySettingsError(f"{ENV_JITTER} is a fraction from 0 up to (not) 1")

    @property
    def max_attempts(self) -> int:
        return len(self.delays) + 1

    def delay(self, attempt: int) -> timedelta:
        """The wait after attempt number ``attempt`` (1-based), jitter applied."""
        base = self.delays[min(max(attempt, 1), len(self.delays)) - 1]
        return timedelta(seconds=base * (1 - self.jitter + 2 * self.jitter * self.rng()))


@dataclass(frozen=True)
class SMTPSettings:
    """The SMTP server email endpoints are sent through (``smtp://host:port``)."""

    host: str
    port: int
    sender: str

    @classmethod
    def parse(cls, url: str, sender: str | None) -> SMTPSettings:
        parts = urlsplit(url)
        if parts.scheme != "smtp" or not parts.hostname:
            raise NotifySettingsError(f"{ENV_SMTP} must be smtp://HOST[:PORT]")
        try:
            port = parts.port or 25
        except ValueError as exc:
            raise NotifySettingsError(f"{ENV_SMTP}: {exc}") from exc
        who = sender or "stopline@localhost"
        if mail_address("mailto:" + who) is None:
            raise NotifySettingsError(f"{ENV_SMTP_FROM} must be one plain address")
        return cls(parts.hostname, port, who)


@dataclass(frozen=True)
class NotifySettings:
    """What a notifier sends, where, and how often it looks."""

    webhooks: Mapping[str, Sequence[Endpoint | str]]  # automation (or "*") -> endpoints
    # signs endpoints configured without a secret of their own (never in a log line)
    secret: str | None = field(default=None, repr=False)
    base_url: str = DEFAULT_BASE_URL  # the inbox address, for the link in each message
    interval: float = 5.0  # seconds between two rounds
    timeout: float = 5.0  # seconds per connect and per read of one attempt
    retry: RetrySchedule = field(default_factory=RetrySchedule)
    backfill: float = 0.0  # the first round also sends stops this many seconds old
    smtp: SMTPSettings | None = None

    def __post_init__(self) -> None:
        endpoints = parse_endpoints(dict(self.webhooks), self.secret or None)
        object.__setattr__(self, "webhooks", endpoints)
        if self.smtp is None and any(e.format == EMAIL for e in self.endpoints()):
            raise NotifySettingsError(f"an email endpoint needs {ENV_SMTP} (smtp://HOST:PORT)")
        if not is_http_url(self.base_url):
            raise NotifySettingsError(f"{ENV_BASE_URL} must be an http(s) URL")
        if not (self.interval > 0 and self.timeout > 0 and self.backfill >= 0):
            raise NotifySettingsError("the interval and timeout are positive, backfill >= 0")

    def endpoints(self) -> list[Endpoint]:
        """Every endpoint configured, each once (by URL)."""
        found: dict[str, Endpoint] = {}
        for entries in self.webhooks.values():
            for e in entries:
                assert isinstance(e, Endpoint)
                found.setdefault(e.url, e)
        return list(found.values())

    def endpoints_for(self, automation: str) -> list[Endpoint]:
        """The endpoints of ``automation``, then those for every automation, each once."""
        found: dict[str, Endpoint] = {}
        for entries in (self.webhooks.get(automation, ()), self.webhooks.get("*", ())):
            for e in entries:
                assert isinstance(e, Endpoint)
                found.setdefault(e.url, e)
        return list(found.values())

    @property
    def attempt_deadline(self) -> float:
        """The most one attempt may take as a whole (its connect, its sending, its answer)."""
        return 3 * self.timeout

    @property
    def lease_seconds(self) -> float:
        """How long a sender holds a message: well past one attempt's deadline."""
        return 30.0 + 4 * self.timeout

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, base_url: str | None = None
    ) -> NotifySettings | None:
        """The settings ``STOPLINE_WEBHOOKS`` and its companions give, or ``None`` when no
        endpoint is configured. ``base_url`` is the default of ``STOPLINE_BASE_URL``."""
        e = os.environ if env is None else env
        hooks = parse_webhook_urls(e.get(ENV_WEBHOOKS))
        if not hooks:
            return None
        raw_retry = (e.get(ENV_RETRY) or "").strip()
        jitter = DEFAULT_JITTER
        if (e.get(ENV_JITTER) or "").strip():
            try:
                jitter = float(e[ENV_JITTER])
            except ValueError as exc:
                raise NotifySettingsError(f"{ENV_JITTER} must be a number") from exc
            if not (math.isfinite(jitter) and 0 <= jitter < 1):
                raise NotifySettingsError(f"{ENV_JITTER} is a fraction from 0 up to (not) 1")
        schedule = RetrySchedule(
            parse_schedule(raw_retry) if raw_retry else DEFAULT_SCHEDULE, jitter
        )
        smtp_url = (e.get(ENV_SMTP) or "").strip()
        return cls(
            webhooks=hooks,
            secret=e.get(ENV_SECRET) or None,
            base_url=(e.get(ENV_BASE_URL) or "").rstrip("/") or base_url or DEFAULT_BASE_URL,
            interval=positive_number(e, ENV_INTERVAL, 5.0),
            retry=schedule,
            smtp=SMTPSettings.parse(smtp_url, e.get(ENV_SMTP_FROM)) if smtp_url else None,
        )
