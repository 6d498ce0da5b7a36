"""What the read memos rest on: a value frozen "as stored" reads back from its stored JSON
as itself, to the type and the order; a data digest kept for a frozen value is its digest;
anything else (mutable, times, keys that are not strings, values without a form) is never
kept, whatever it holds."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stopline.core.canonical import CanonicalError, digest
from stopline.core.data_digest import data_digest, stored_form
from stopline.core.fast_digest import fast_digest
from stopline.core.frozen import FrozenDict, deeply_frozen, freeze, load_frozen_deep, storage_json
from strategies import hostile_values, json_values, times


@settings(max_examples=300)
@given(json_values())
def test_a_value_frozen_as_stored_reads_back_as_itself(value: Any) -> None:
    frozen = freeze(value)
    assert deeply_frozen(frozen, as_stored=True)
    back = load_frozen_deep(storage_json(frozen))
    assert repr(back) == repr(frozen)  # the same values, types and order


@settings(max_examples=300)
@given(hostile_values())
def test_only_what_reads_back_as_itself_counts_as_stored(value: Any) -> None:
    frozen = freeze(value)
    if not deeply_frozen(frozen, as_stored=True):
        return
    try:
        text = storage_json(frozen)
    except (CanonicalError, ValueError, TypeError, RecursionError):
        return  # no stored form: never written, so never remembered
    assert repr(load_frozen_deep(text)) == repr(frozen)


@given(json_values(), times)
def test_times_and_mutable_parts_are_never_counted_as_stored(value: Any, at: Any) -> None:
    assert not deeply_frozen(FrozenDict({"at": at, "v": freeze(value)}), as_stored=True)
    assert deeply_frozen(FrozenDict({"at": at}))  # frozen all the same
    assert not deeply_frozen(FrozenDict({"v": [freeze(value)]}))
    assert not deeply_frozen(FrozenDict({"v": {"k": freeze(value)}}))
    assert not deeply_frozen(FrozenDict({1: "one"}), as_stored=True)


@settings(max_examples=300)
@given(st.dictionaries(st.text(max_size=8), json_values(), max_size=5))
def test_a_kept_data_digest_is_the_digest(value: dict[str, Any]) -> None:
    frozen = freeze(value)
    assert data_digest(frozen) == fast_digest(frozen)
    assert data_digest(frozen) == fast_digest(frozen)  # the kept one
    assert stored_form(frozen)
    plain = {k: [v] for k, v in value.items()}  # mutable: worked out every time
    first = data_digest(plain)
    for key in plain:
        plain[key].append(1)
    if plain:
        assert data_digest(plain) != first
        assert data_digest(plain) == fast_digest(plain)


def _outcome(fn: Any, value: Any) -> tuple[str, str]:
    try:
        return "digest", fn(value)
    except CanonicalError as exc:
        return "refused", str(exc)


def _same(fast: tuple[str, str], exact: tuple[str, str]) -> bool:
    """The same digest, or both refused: data with two faults (a key that is not a string and
    a lone surrogate elsewhere) may be refused for either one first, by either path."""
    return fast == exact or (fast[0] == exact[0] == "refused")


@settings(max_examples=300)
@given(
    st.dictionaries(st.text(max_size=8), hostile_values() | times, max_size=5),
    st.text(max_size=8),
    json_values() | times,
)
def test_a_data_digest_put_together_from_its_values_is_the_exact_digest(
    value: dict[str, Any], key: str, new: Any
) -> None:
    """The digest of data is assembled from the kept text of each value; it is the exact
    serialiser's digest (or refusal) for any data, before and after one value changes, the
    values kept being the very objects of the data before."""
    frozen = freeze(value)
    assert _same(_outcome(data_digest, frozen), _outcome(digest, frozen))
    assert stored_form(frozen) == deeply_frozen(frozen, as_stored=True)  # kept only if so
    if not isinstance(frozen, FrozenDict):
        return
    changed = FrozenDict({**frozen, key: freeze(new)})
    assert _same(_outcome(data_digest, changed), _outcome(digest, changed))
    assert stored_form(changed) == deeply_frozen(changed, as_stored=True)
    inner = FrozenDict({"v": FrozenDict({"k": [1]})})  # frozen outside, mutable inside
    before = data_digest(inner)
    inner["v"]["k"].append(2)
    assert data_digest(inner) != before
    assert data_digest(inner) == digest(inner)


FLAT_EDGES = [
    {"\ue000": "a", "\U0001f600": "b"},  # code point and UTF-16 orders differ
    {"b": 2**53, "a": 1},  # past the safe integers
    {"a": -(2**53)},
    {"a": True, "b": 0},
    {"a": 1.0},
    {"a": None},
    {"a": 'x\u2028\x7f\x1f"\\'},
    {"é": "x", "e": "y"},
    {},
]


@settings(max_examples=300)
@given(
    st.dictionaries(
        st.text(max_size=3),
        st.text(max_size=4) | st.integers(-(2**60), 2**60) | st.booleans() | st.floats(),
        max_size=9,
    )
    | st.sampled_from(FLAT_EDGES)
)
def test_a_small_flat_value_in_data_gets_the_exact_digest(value: dict[str, Any]) -> None:
    """A small mapping of strings and integers is written member by member: keys out of code
    point order, integers past 2**53 and anything but strings and integers go the general way,
    with the same digest or refusal."""
    data = FrozenDict({"step": FrozenDict(value)})
    assert _same(_outcome(data_digest, data), _outcome(digest, data))
