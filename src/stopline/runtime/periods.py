"""Keys for recurring checks: one item per subject and period.

A check that runs every hour but must act at most once a day discovers one key per subject and
day, ``host@2026-11-30``: re-discovery within the day finds the existing item and leaves it
alone (whatever its state), and the next day brings a new item. :func:`period_key` makes such
keys the same way everywhere.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

PERIODS = ("hour", "day", "week", "month", "year")


def period_of(now: datetime, every: str = "day", tz: tzinfo = UTC) -> str:
    """The period ``now`` falls in, as text: ``2026-11-30T14`` (hour), ``2026-11-30`` (day),
    ``2026-W48`` (ISO week), ``2026-11`` (month), ``2026`` (year), in time zone ``tz``."""
    if now.utcoffset() is None:
        raise ValueError("period_of needs a timezone-aware time (ctx.now is one)")
    local = now.astimezone(tz)
    if every == "hour":
        return local.strftime("%Y-%m-%dT%H")
    if every == "day":
        return local.strftime("%Y-%m-%d")
    if every == "week":
        year, week, _ = local.isocalendar()
        return f"{year}-W{week:02d}"
    if every == "month":
        return local.strftime("%Y-%m")
    if every == "year":
        return local.strftime("%Y")
    raise ValueError(f"every must be one of {', '.join(PERIODS)}, not {every!r}")


def period_key(now: datetime, every: str = "day", *, subject: str = "", tz: tzinfo = UTC) -> str:
    """``SUBJECT@PERIOD`` (or ``PERIOD`` alone without a subject): the key of one recurring
    check of ``subject`` in the period ``now`` falls in. ``period_key(ctx.now, "day",
    subject="db-1")`` is ``db-1@2026-11-30`` all that day (UTC unless ``tz`` says otherwise)."""
    if "\x00" in subject or "@" in subject:
        raise ValueError(f"a subject holds no '@' or NUL character: {subject!r}")
    period = period_of(now, every, tz)
    return f"{subject}@{period}" if subject else period
