"""The wall clock. The command layer and the runtime read the time through a ``Clock`` they are
given (tests pass a fake one); :func:`utcnow` is the real one. The core never reads it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)
