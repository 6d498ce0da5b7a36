"""The edges of the canonical form and of the fast digest that the property tests reach only by
chance: ``to_plain`` refusing what a digest refuses and leaving nothing unconverted, keys that
sort apart in UTF-16 only past their first character, an empty key beside a non-ASCII one,
float and integer subclasses, strings that look like floats, keys of mixed types; and the
read-only values (``frozen.py``) that kept digests rest on."""

from __future__ import annotations

import copy
import dataclasses
import enum
import hashlib
import json
import math
import pickle
import uuid
from datetime import UTC, date, datetime
from typing import Any

import pytest

from stopline.core.canonical import CanonicalError, canonical_json, digest, format_time, to_plain
from stopline.core.data_digest import data_digest
from stopline.core.fast_digest import fast_canonical, fast_digest
from stopline.core.frozen import FrozenDict, deeply_frozen, freeze, load_frozen

from .helpers import Harness


def outcome(fn: Any, value: Any) -> str:
    """The digest, or the refusal's message (any other exception fails the test)."""
    try:
        return str(fn(value))
    except CanonicalError as exc:
        return f"refused: {exc}"


# --- to_plain: the rules of the canonical form, to the bottom ---------------------------------


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_to_plain_refuses_nan_and_infinities_as_the_digest_does(bad: float) -> None:
    """What ``show --json`` hands over has no value a digest could not be made of."""
    with pytest.raises(CanonicalError, match="NaN and infinities"):
        to_plain({"load": [1.0, bad]})
    with pytest.raises(CanonicalError, match="NaN and infinities"):
        digest({"load": [1.0, bad]})


@pytest.mark.parametrize("key", [1, True, None])
def test_to_plain_refuses_a_key_that_is_not_a_string(key: Any) -> None:
    """{1: ...} would come out as {"1": ...} once written: refused, as by the digest."""
    with pytest.raises(CanonicalError, match="key must be a string"):
        to_plain({"params": {key: "x"}})
    with pytest.raises(CanonicalError, match="key must be a string"):
        digest({"params": {key: "x"}})


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_to_plain_writes_every_kind_of_bytes_as_a_bytes_object(kind: Any) -> None:
    """A memoryview is a bytes object too, never an array of its byte values."""
    raw = kind(b"\x00\xff?\xfb")
    assert to_plain({"raw": raw}) == {"raw": {"$bytes": "AP8/+w=="}}
    assert json.loads(canonical_json({"raw": raw})) == to_plain({"raw": raw})


def test_to_plain_of_a_record_is_plain_json_to_the_bottom(h: Harness) -> None:
    """What a record's ``to_plain`` returns (an event's time is a ``datetime``) is made plain
    in turn: the result is JSON as it is, the text the digest is made of."""
    h.to_awaiting()
    for event in h.events:
        plain = to_plain(event)
        assert plain["at"] == format_time(event.at)
        text = json.dumps(plain, allow_nan=False)
        assert json.loads(text) == json.loads(canonical_json(event))
        assert digest(plain) == digest(event)
        assert digest({k: v for k, v in plain.items() if k != "hash"}) == event.hash


# --- the fast digest: where json's C encoder writes otherwise than RFC 8785 -------------------


def test_keys_that_differ_in_utf16_order_after_their_first_character() -> None:
    """Keys sharing an ASCII prefix, one going on with U+FB33 and one with U+1F600 (a surrogate
    pair, so first in UTF-16): the fast path sorts them as RFC 8785 does."""
    value = {"a\ufb33": 1, "a\U0001f600": 2, "a": 0}
    expected = '{"a":0,"a\U0001f600":2,"a\ufb33":1}'
    for form in (value, FrozenDict(value), [{"x": value}]):
        assert fast_canonical(form) == canonical_json(form)
    assert canonical_json(value) == fast_canonical(value) == expected
    assert fast_digest(value) == digest(value) == hashlib.sha256(expected.encode()).hexdigest()


@pytest.mark.parametrize(
    "value",
    [
        {"": 1, "é": 2},
        {"": 0, "\ue000": 1, "\U00010000": 2},
        [FrozenDict({"": None, "\u20ac": "euro"})],
    ],
)
def test_an_empty_key_beside_a_non_ascii_key(value: Any) -> None:
    """An empty key is a key like any other on the fast path (it has no largest character)."""
    assert fast_canonical(value) == canonical_json(value)
    assert fast_digest(value) == digest(value)


class Ratio(float):
    """A float of another type (as numpy's float64 is): its value is what is written."""


class Count(int):
    """An integer of another type: refused out of range as any integer is."""


@pytest.mark.parametrize(
    "value",
    [
        [Ratio(1.0)],
        {"r": Ratio(1e-7), "s": Ratio(2.5)},
        [Ratio(1e21), 0.5],
        {"n": Count(2**60)},
        {"n": Count(-(2**53))},
    ],
    ids=["1.0", "1e-7", "1e21", "2^60", "-2^53"],
)
def test_float_and_integer_subclasses_digest_as_their_value(value: Any) -> None:
    """The C encoder writes a float subclass as ``repr`` does (``1.0``) and an integer subclass
    at any size: the fast path leaves both to the exact serialiser."""
    assert outcome(fast_digest, value) == outcome(digest, value)
    assert outcome(fast_canonical, value) == outcome(canonical_json, value)


def test_a_float_subclass_is_written_as_ecmascript_writes_it() -> None:
    assert fast_canonical([Ratio(1.0), Ratio(1e-7)]) == "[1,1e-7]"
    with pytest.raises(CanonicalError, match="outside"):
        fast_digest([Count(2**53)])


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (["2.0", 2.0], '["2.0",2]'),
        (['say "1.0"', 1.0], '["say \\"1.0\\"",1]'),
        (["a\\", "1e-07", 1e-07], '["a\\\\","1e-07",1e-7]'),
        ({"k 1.0": "x 1e+16", "v": 1e16}, '{"k 1.0":"x 1e+16","v":10000000000000000}'),
        (['\\"3.0', 3.0, '"'], '["\\\\\\"3.0",3,"\\""]'),
    ],
)
def test_strings_that_look_like_floats_are_left_as_they_are(value: Any, text: str) -> None:
    """Only numbers are rewritten in the C encoder's text, never the inside of a string or a
    key, escaped quotes and backslashes included."""
    assert canonical_json(value) == fast_canonical(value) == text
    assert fast_digest(value) == digest(value)


MIXED_KEYS: dict[Any, int] = {"a": 1, 1.5: 2}


@pytest.mark.parametrize(
    "bad",
    [{"a": 1, 2: "b"}, {("t",): 1}, [{"x": 1, None: 2}], FrozenDict(MIXED_KEYS)],
    ids=["str-and-int", "tuple", "str-and-none", "frozen-str-and-float"],
)
def test_keys_of_mixed_or_unwritable_types_are_refused_on_the_fast_path(bad: Any) -> None:
    """json's C encoder raises TypeError for these (it cannot sort them, or write the key):
    the fast path refuses them with the digest's CanonicalError all the same."""
    with pytest.raises(CanonicalError, match="key must be a string"):
        fast_digest(bad)
    with pytest.raises(CanonicalError, match="key must be a string"):
        fast_canonical(bad)
    assert outcome(fast_digest, bad) == outcome(digest, bad)


# --- frozen values: read-only, whatever the way in --------------------------------------------


def test_a_frozen_dict_refuses_every_mutating_method() -> None:
    """``|=`` and ``setdefault`` included: each raises and leaves the mapping as it was."""
    frozen = FrozenDict({"a": 1})
    attempts: list[Any] = [
        lambda d: d.__setitem__("a", 2),
        lambda d: d.__delitem__("a"),
        lambda d: d.__ior__({"a": 2}),
        lambda d: d.setdefault("b", 2),
        lambda d: d.update(a=2),
        lambda d: d.pop("a"),
        lambda d: d.popitem(),
        lambda d: d.clear(),
    ]
    for attempt in attempts:
        with pytest.raises(TypeError, match="immutable"):
            attempt(frozen)
    with pytest.raises(TypeError, match="immutable"):
        frozen |= {"b": 2}
    assert frozen == {"a": 1} and type(frozen) is FrozenDict


def test_equal_frozen_dicts_hash_alike_whatever_their_order() -> None:
    """Equal mappings built in another order are one key of a set or a dict."""
    one = FrozenDict({"a": 1, "b": (2, 3), "c": None})
    other = FrozenDict({"c": None, "b": (2, 3), "a": 1})
    assert one == other and hash(one) == hash(other)
    assert len({one, other}) == 1
    assert digest(one) == digest(other)


def test_a_copy_of_a_frozen_value_is_frozen() -> None:
    """A deep copy or a pickled copy is read-only still, and equal."""
    frozen = freeze({"a": {"b": [1, 2]}})
    for made in (copy.copy(frozen), copy.deepcopy(frozen), pickle.loads(pickle.dumps(frozen))):
        assert type(made) is FrozenDict and made == frozen
        assert deeply_frozen(made)
        with pytest.raises(TypeError, match="immutable"):
            made["a"] = 2


def test_freeze_reaches_inside_tuples_and_dicts() -> None:
    """Lists inside tuples and mappings inside dicts are frozen too."""
    frozen = freeze({"a": ({"b": [1]}, [2]), "c": {"d": [3]}})
    assert frozen == {"a": ({"b": (1,)}, (2,)), "c": {"d": (3,)}}
    assert type(frozen["a"][0]) is FrozenDict and type(frozen["c"]) is FrozenDict
    assert deeply_frozen(frozen) and deeply_frozen(frozen, as_stored=True)
    assert freeze(([1], {"x": [2]})) == ((1,), {"x": (2,)})
    assert deeply_frozen(freeze(([1], {"x": [2]})))


def test_a_mutable_scalar_is_never_counted_as_frozen() -> None:
    """A bytearray can change under a kept digest: data holding one is worked out every time."""
    raw = bytearray(b"one")
    data = FrozenDict({"v": (raw,)})
    assert not deeply_frozen(data) and not deeply_frozen(data, as_stored=True)
    before = data_digest(data)
    assert before == digest(data)
    raw[:] = b"two"
    assert data_digest(data) == digest(data) != before


@pytest.mark.parametrize("text", ['{"a":{"b":[1]}}', b'{"a":{"b":[1]}}'])
def test_load_frozen_reads_read_only_mappings_from_text_or_bytes(text: str | bytes) -> None:
    """Stored JSON handed over as bytes reads back as read-only as text does."""
    loaded = load_frozen(text)
    assert loaded == {"a": {"b": [1]}}
    assert type(loaded) is FrozenDict and type(loaded["a"]) is FrozenDict
    with pytest.raises(TypeError, match="immutable"):
        loaded["a"]["b"] = 2


# --- times: one instant, one text ------------------------------------------------------------


@pytest.mark.parametrize("first_fold", [0, 1])
def test_the_same_wall_time_on_either_side_of_a_fold_keeps_its_own_instant(
    first_fold: int,
) -> None:
    """01:30 in New York on the night the clocks go back happens twice, an hour apart. Python
    compares (and hashes) the two as equal, so a cache keyed on the time gave the second one
    the first one's text, and two documents an hour apart the same digest."""
    from zoneinfo import ZoneInfo

    ny = ZoneInfo("America/New_York")
    first = datetime(2026, 11, 1, 1, 30, tzinfo=ny).replace(fold=first_fold)
    second = first.replace(fold=1 - first_fold)
    assert first == second  # the trap: equal to Python, an hour apart in fact
    texts = {0: "2026-11-01T05:30:00.000000Z", 1: "2026-11-01T06:30:00.000000Z"}
    assert format_time(first) == texts[first_fold]
    assert format_time(second) == texts[1 - first_fold]
    assert digest({"at": first}) != digest({"at": second})
    # a UTC time, the cached path, still gives the text of its instant
    assert format_time(second.astimezone(UTC)) == texts[1 - first_fold]


# --- the fast digest: where orjson writes otherwise than RFC 8785 -----------------------------


class Mode(enum.Enum):
    ON = "on"


@dataclasses.dataclass
class Plain:
    x: int


class Words(list[Any]):
    """A list of another type: orjson writes it as a list, the canonical form refuses it."""


class Name(str):
    """A string of another type: its characters are what is written."""


def _deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"d": [value]}
    return value


ORJSON_EDGES: list[Any] = [
    {"load": [1.0, math.nan]},  # orjson writes NaN as null: refused here all the same
    {"load": FrozenDict({"x": math.inf})},
    [-math.inf],
    {"f": 1e-7, "g": 0.0001, "h": 1e-5, "i": 1e16, "j": 1e21, "k": 123.456, "l": 5e-324},
    [0.1, 2.5, -0.0, 1.0, 100.0],
    {"n": 2**53 - 1, "m": -(2**53 - 1)},
    {"n": 2**53},  # orjson writes it; RFC 8785 refuses it
    [2**63 - 1, 2**64 - 1],
    [2**70],  # orjson refuses it
    {"t": datetime(2026, 12, 5, 21, 0, 0, 123456, tzinfo=UTC)},  # orjson's own form differs
    {"d": date(2026, 12, 5)},
    {"u": uuid.UUID(int=1)},  # orjson writes it; the canonical form refuses it
    {"e": Mode.ON},
    {"p": Plain(1)},
    Words(["a"]),
    {"s": Name("é\u2028")},
    {"b": b"\x00\xff", "m": memoryview(b"?")},
    _deep(300),  # past orjson's depth
    {'\b\f\n\r\t"\\/\x01\x7f': "\x00\x1f\x7f\u0085\u2029"},
]


@pytest.mark.parametrize("value", ORJSON_EDGES, ids=range(len(ORJSON_EDGES)))
def test_what_orjson_writes_otherwise_goes_the_exact_way(value: Any) -> None:
    """orjson writes floats, NaN, large integers, times, UUIDs, enums, dataclasses and
    subclasses otherwise than the canonical form, or not at all: the digest and the text of
    each are those of the exact serialiser, refusals included (same message)."""
    assert outcome(fast_digest, value) == outcome(digest, value)
    assert outcome(fast_canonical, value) == outcome(canonical_json, value)


def test_a_lone_surrogate_is_refused_by_the_fast_digest_as_by_the_exact_one() -> None:
    """orjson refuses it; the text the fast path hands back keeps it, for the caller's UTF-8
    encoding to refuse, and the fast digest refuses it with the exact serialiser's reason."""
    value = {"k": ["ok", "\ud800"]}
    assert outcome(fast_digest, value) == outcome(digest, value)
    assert outcome(digest, value).startswith("refused: ")
    assert fast_canonical(value) == '{"k":["ok","\ud800"]}'


def test_a_cycle_is_refused_on_the_fast_path_as_by_the_exact_one() -> None:
    loop: list[Any] = []
    loop.append(loop)
    for fn in (fast_digest, fast_canonical, digest):
        with pytest.raises((CanonicalError, ValueError, RecursionError)):
            fn({"x": loop})
