"""period_key: one key per subject and period, the same all through the period."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stopline import period_key
from stopline.runtime.periods import period_of

NOW = datetime(2026, 11, 30, 14, 5, tzinfo=UTC)


def test_each_period_has_its_documented_form() -> None:
    """hour, day, ISO week, month, year; with and without a subject."""
    assert period_key(NOW, "day", subject="db-1") == "db-1@2026-11-30"
    assert period_key(NOW, "hour") == "2026-11-30T14"
    assert period_key(NOW, "week") == "2026-W49"
    assert period_key(NOW, "month") == "2026-11"
    assert period_key(NOW, "year") == "2026"


def test_a_time_zone_moves_the_day() -> None:
    """The same instant is another day in a time zone far enough east."""
    assert period_key(NOW.replace(hour=23), "day", tz=timezone(timedelta(hours=2))) == "2026-12-01"


def test_bad_input_is_refused() -> None:
    """A naive time, an unknown period and a subject with '@' are errors."""
    with pytest.raises(ValueError, match="timezone-aware"):
        period_of(NOW.replace(tzinfo=None))
    with pytest.raises(ValueError, match="every must be"):
        period_of(NOW, "fortnight")
    with pytest.raises(ValueError, match="'@'"):
        period_key(NOW, subject="a@b")


@given(st.datetimes(timezones=st.just(UTC)), st.sampled_from(["hour", "day", "week", "month"]))
def test_the_key_changes_exactly_when_the_period_does(moment: datetime, every: str) -> None:
    """Two instants share a key exactly when they fall in the same period."""
    start = {
        "hour": moment.replace(minute=0, second=0, microsecond=0),
        "day": moment.replace(hour=0, minute=0, second=0, microsecond=0),
        "week": (moment - timedelta(days=moment.weekday())).replace(
            hour=0, minute=0, second=0, microsecond=0
        ),
        "month": moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0),
    }[every]
    assert period_key(start, every) == period_key(moment, every)
    if start > datetime.min.replace(tzinfo=UTC) + timedelta(days=1):
        assert period_key(start - timedelta(microseconds=1), every) != period_key(moment, every)


def test_a_week_is_the_iso_week_with_its_own_year_and_two_digits() -> None:
    """1 January 2027 is a Friday of ISO week 53 of 2026; early weeks keep their zero, so
    keys sort in time order."""
    assert period_key(datetime(2027, 1, 1, tzinfo=UTC), "week") == "2026-W53"
    assert period_key(datetime(2026, 2, 2, tzinfo=UTC), "week", subject="db-1") == "db-1@2026-W06"
