"""Log lines for people (``text``) or for a log shipper (``json``: one object per line).

``stopline run`` and ``stopline serve`` take ``--log-format json`` (or ``STOPLINE_LOG_FORMAT``);
worker processes inherit the choice through the environment. Every JSON line carries
``time``, ``level``, ``logger``, ``message`` and the fields of :data:`FIELDS` (``null`` when a
line is not about one): the item, its automation and state, the worker, and the decision.
Request lines of ``serve`` add ``method``, ``path``, ``status`` and ``duration_ms``;
notification lines add ``notification``, ``endpoint``, ``attempt`` and ``outcome``.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

ENV_FORMAT = "STOPLINE_LOG_FORMAT"
ENV_LEVEL = "STOPLINE_LOG"
FORMATS = ("text", "json")
FIELDS = ("item", "automation", "state", "worker", "decision")
_EXTRA = (
    "method",
    "path",
    "status",
    "duration_ms",
    "client",
    "notification",
    "endpoint",
    "attempt",
    "status_code",
    "outcome",
    "hook",
    "step",
)
_MAX_TRACEBACK = 8000


_CONTEXT: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "stopline_log_context", default=None
)


@contextmanager
def context(**fields: Any) -> Iterator[None]:
    """Every line logged in the block (on this thread) carries ``fields`` unless it names its
    own (a worker sets item, automation, state and worker around each step)."""
    outer = _CONTEXT.get() or {}
    token = _CONTEXT.set({**outer, **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


class ContextFilter(logging.Filter):
    """Adds the fields of :func:`context` to each record that does not carry them."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in (_CONTEXT.get() or {}).items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


class JSONFormatter(logging.Formatter):
    """One JSON object per record (see the module docstring for the keys)."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat().replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            doc[name] = getattr(record, name, None)
        for name in _EXTRA:
            if hasattr(record, name):
                doc[name] = getattr(record, name)
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)[-_MAX_TRACEBACK:]
        return json.dumps(doc, default=str, ensure_ascii=False)


def printable(text: str) -> str:
    """``text`` with every character that is not printable (a newline, a terminal escape)
    written as its escape: quoted in a log line, no text can add a line of its own."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class TextFormatter(logging.Formatter):
    """``LEVEL:logger:message``, the message :func:`printable` (an item's key, a hook's
    message or a request's path may hold a newline); a traceback follows on its own lines."""

    def __init__(self) -> None:
        super().__init__("%(levelname)s:%(name)s:%(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        return printable(super().formatMessage(record))


def configure(fmt: str | None = None, *, level: str | None = None) -> str:
    """Set up the root handler on stderr in ``fmt`` (default: ``STOPLINE_LOG_FORMAT``, else
    text); the choice is put in the environment for worker processes. Returns the format."""
    chosen = (fmt or os.environ.get(ENV_FORMAT) or "text").strip().lower()
    if chosen not in FORMATS:
        raise ValueError(f"the log format is text or json, not {chosen!r}")
    os.environ[ENV_FORMAT] = chosen
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(ContextFilter())
    if chosen == "json":
        handler.setFormatter(JSONFormatter())
    else:
        handler.setFormatter(TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel((level or os.environ.get(ENV_LEVEL) or "WARNING").upper())
    return chosen
