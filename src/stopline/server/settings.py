"""Server options, each with an environment variable (``stopline serve`` reads them)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..runtime.notify_settings import (
    DEFAULT_BASE_URL,
    NOTIFY_ENV,
    NotifySettings,
    NotifySettingsError,
    parse_webhook_urls,
    positive_number,
)

MAX_BODY = 64 * 1024
DAY = 86400.0


class SettingsError(ValueError):
    """An option has a value the server cannot use."""


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    try:
        return positive_number(env, name, default)
    except NotifySettingsError as exc:
        raise SettingsError(str(exc)) from exc


NOTIFY_VARIABLES = frozenset(NOTIFY_ENV)


def parse_webhooks(text: str | None) -> dict[str, object]:
    """``{"automation": ["https://...", {"url": ...}], "*": [...]}`` (``*``: every
    automation), its shape checked."""
    try:
        return parse_webhook_urls(text)
    except NotifySettingsError as exc:
        raise SettingsError(str(exc)) from exc


@dataclass(frozen=True)
class Settings:
    """Everything configurable about one server (defaults: loopback, read-write)."""

    read_only: bool = False  # STOPLINE_READ_ONLY=1: forms hidden, commands refused (403)
    trust_proxy_header: str | None = None  # STOPLINE_TRUST_PROXY_HEADER=X-Forwarded-User
    secret: str | None = None  # STOPLINE_SECRET: signs session cookies and CSRF tokens
    max_body: int = MAX_BODY  # STOPLINE_MAX_BODY (bytes)
    overdue_after: float = DAY  # STOPLINE_OVERDUE_AFTER (seconds stopped)
    app_spec: str | None = None  # STOPLINE_APP: automations, for reconcile and publish
    cookie_secure: bool = False  # STOPLINE_COOKIE_SECURE=1 behind TLS
    base_url: str | None = None  # STOPLINE_BASE_URL: links in webhooks
    # the notifier's variables (notify_settings.NOTIFY_ENV), checked when read
    notify_env: Mapping[str, str] = field(default_factory=dict)
    notify_interval: float = 5.0  # STOPLINE_NOTIFY_INTERVAL (seconds)
    log_requests: bool = True  # one log line per request (stopline.http.access)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        e = os.environ if env is None else env
        header = (e.get("STOPLINE_TRUST_PROXY_HEADER") or "").strip() or None
        if header is not None and not all(c.isalnum() or c == "-" for c in header):
            raise SettingsError("STOPLINE_TRUST_PROXY_HEADER must be a header name")
        return cls(
            read_only=_flag(e.get("STOPLINE_READ_ONLY")),
            trust_proxy_header=header,
            secret=e.get("STOPLINE_SECRET") or None,
            max_body=int(_number(e, "STOPLINE_MAX_BODY", MAX_BODY)),
            overdue_after=_number(e, "STOPLINE_OVERDUE_AFTER", DAY),
            app_spec=e.get("STOPLINE_APP") or None,
            cookie_secure=_flag(e.get("STOPLINE_COOKIE_SECURE")),
            base_url=(e.get("STOPLINE_BASE_URL") or "").rstrip("/") or None,
            notify_env=_notify_env(e),
            notify_interval=_number(e, "STOPLINE_NOTIFY_INTERVAL", 5.0),
        )

    @property
    def webhooks(self) -> dict[str, object]:
        """The endpoints of ``STOPLINE_WEBHOOKS``, as configured."""
        return parse_webhooks(self.notify_env.get("STOPLINE_WEBHOOKS"))

    def notify_settings(self, default_base_url: str) -> NotifySettings | None:
        """The webhook notifier's settings (``None`` when no webhook is configured)."""
        try:
            return NotifySettings.from_env(
                self.notify_env, base_url=self.base_url or default_base_url
            )
        except NotifySettingsError as exc:
            raise SettingsError(str(exc)) from exc

    @property
    def authenticated_beyond_loopback(self) -> bool:
        """Whether people can be told apart without a loopback-only trust assumption."""
        return bool(self.secret) or bool(self.trust_proxy_header)


def _notify_env(env: Mapping[str, str]) -> dict[str, str]:
    """The notifier's variables, checked now (a bad one stops the server before it starts)."""
    found = {k: v for k, v in env.items() if k in NOTIFY_VARIABLES}
    try:
        NotifySettings.from_env(found, base_url=DEFAULT_BASE_URL)
    except NotifySettingsError as exc:
        raise SettingsError(str(exc)) from exc
    return found
