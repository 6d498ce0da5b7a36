"""The line a search of the inbox matches (``core/search.py``): made of the item's own data for a
stopped item, nothing for any other, and never a failure, whatever a hook left in the data."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stopline.core.frozen import freeze
from stopline.core.records import Item
from stopline.core.search import search_text
from stopline.core.states import STOP_STATES, State
from strategies import hostile_values, json_values

T0 = datetime(2026, 12, 5, tzinfo=UTC)


def item(data: Any, state: State = State.EXCEPTION, key: str = "INC-7") -> Item:
    return Item(
        id="i",
        automation="Tickets",
        key=key,
        state=state,
        version=1,
        seq=1,
        head="",
        created_at=T0,
        updated_at=T0,
        attempts=1,
        max_attempts=3,
        next_eligible_at=T0,
        data=freeze(data),
    )


EVERY_PART = {
    "proposal": {"action": "Restart", "target": "API-1", "rationale": "CPU high"},
    "report": {"data": {"summary": "Disk Full"}},
    "exception": {"owner": "Ops", "why": "Unclear"},
    "account": {"last_error": {"class": "Timeout", "message": "No Answer"}},
    "revision": {"failure": {"reasons": ["Readback_Mismatch", 3, "Stale"]}},
    "evidence": {"secret": "NOT SEARCHED"},
}


def test_the_line_holds_each_part_in_order_lower_cased() -> None:
    assert search_text(item(EVERY_PART)) == (
        "tickets/inc-7 restart api-1 cpu high disk full ops unclear timeout no answer"
        " readback_mismatch stale"
    )


@pytest.mark.parametrize("state", sorted(STOP_STATES, key=lambda s: s.value))
def test_every_stop_state_has_a_line(state: State) -> None:
    assert search_text(item({}, state)) == "tickets/inc-7" + " " * 9


@pytest.mark.parametrize("state", [s for s in State if s not in STOP_STATES])
def test_no_other_state_has_one(state: State) -> None:
    assert search_text(item(EVERY_PART, state)) is None


def test_letters_beyond_ascii_are_lower_cased_too() -> None:
    line = search_text(item({"exception": {"why": "ÉTÉ Überlast"}}, key="ÄPFEL"))
    assert line is not None and "tickets/äpfel" in line and "été überlast" in line


@pytest.mark.parametrize(
    "data",
    [
        {"proposal": "restart"},  # not an object
        {"proposal": {"action": {"nested": "restart"}}},  # not text
        {"report": {"data": ["summary"]}},
        {"account": {"last_error": None}},
        {"revision": {"failure": {"reasons": "one reason, not a list"}}},
        {"exception": {"owner": 7, "why": 1.5}},
    ],
)
def test_what_is_not_text_where_text_belongs_adds_nothing_or_itself(data: Any) -> None:
    line = search_text(item(data))
    assert line is not None and line.startswith("tickets/inc-7")
    assert "nested" not in line and "summary" not in line and "7" not in line[14:]


@given(st.dictionaries(st.sampled_from(list(EVERY_PART)), json_values() | hostile_values()))
def test_any_data_gives_a_line_and_never_fails(data: Any) -> None:
    try:
        stored = item(data)
    except Exception:  # a value no item can hold: nothing to search
        return
    line = search_text(stored)
    assert isinstance(line, str) and line.startswith("tickets/inc-7")
    assert line == line.lower()
