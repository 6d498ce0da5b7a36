"""The core refuses a discovery whose key or input no record may hold, whoever built the
command: the scheduler's checks run on the hook's objects, and the core's on what is written."""

from __future__ import annotations

from typing import Any

import pytest

from stopline.core.commands import Discover
from stopline.core.decide import decide
from stopline.core.decision import Outcome
from stopline.core.limits import MAX_ITEM_KEY, item_key_problem
from stopline.core.policy import Policy
from stopline.core.reasons import Reason
from stopline.core.step import Context

from .helpers import T0


class Text(str):
    __slots__ = ()


@pytest.mark.parametrize(
    ("key", "input"),
    [
        ("k" * (MAX_ITEM_KEY + 1), {}),
        ("a\x00b", {}),
        ("\ud800", {}),
        (Text("subclass"), {}),
        ("big", {"text": "x" * (256 * 1024 + 1)}),
        ("nan", {"n": float("nan")}),
        ("wide", {"n": 2**64}),
        ("cafe\u0301", {}),
    ],
    ids=["too-long", "nul", "surrogate", "str-subclass", "too-big", "nan", "wide-int", "nfd"],
)
def test_a_key_or_input_no_record_may_hold_is_refused(key: Any, input: dict[str, Any]) -> None:
    """Before: a key too long, with a NUL, of a ``str`` subclass or not in NFC, and an input
    too big, were
    applied (the core checked that the key was not empty and that the input had a canonical
    form, which refused the other cases already)."""
    d = decide(None, Discover("itm_x", "auto", key, input), Context(T0, Policy()))
    assert d.outcome is Outcome.REFUSED and d.reasons == (Reason.INVALID_INPUT,)
    assert d.after is None and d.event is None


def test_the_longest_key_is_taken() -> None:
    d = decide(None, Discover("itm_x", "auto", "k" * MAX_ITEM_KEY), Context(T0, Policy()))
    assert d.outcome is Outcome.APPLIED
    assert item_key_problem("k" * MAX_ITEM_KEY) is None
