"""RFC 8785 (JCS): the standard's test vectors, agreement with an independent implementation
(the rfc8785 package), the fast event digest, the legacy form and digest_matches."""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from stopline.core.canonical import CanonicalError, canonical_json, digest, format_float
from stopline.core.fast_digest import fast_digest
from stopline.core.frozen import FrozenDict, freeze
from stopline.core.legacy_form import (
    digest_forms,
    digest_matches,
    legacy_canonical_json,
    legacy_digest,
    legacy_fast_digest,
)
from stopline.core.policy import ApprovalPolicy, ApprovalRule
from strategies import (
    MAX_SAFE_INTEGER,
    finite_floats,
    huge_integers,
    json_strings,
    json_values,
    lone_surrogates,
    non_finite,
    surrogate_strings,
)

RECORDS_MD = Path(__file__).resolve().parents[2] / "docs" / "records.md"


def jcs(value: Any) -> str:
    """The rfc8785 package's canonical text of a plain JSON value."""
    return rfc8785.dumps(value).decode("utf-8")


# --- the vectors of RFC 8785 --------------------------------------------------------------------

# Appendix B: IEEE 754 bit patterns and the text ECMAScript (and so JCS) writes for them.
NUMBER_VECTORS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


def from_bits(bits: str) -> float:
    value: float = struct.unpack(">d", bytes.fromhex(bits))[0]
    return value


@pytest.mark.parametrize(("bits", "text"), NUMBER_VECTORS)
def test_rfc8785_number_vectors(bits: str, text: str) -> None:
    """Every number of RFC 8785 Appendix B is written as the RFC writes it, fast path too."""
    value = from_bits(bits)
    assert canonical_json(value) == format_float(value) == text == jcs(value)
    assert fast_digest([value]) == digest([value])


@pytest.mark.parametrize("bits", ["7fffffffffffffff", "7ff0000000000000", "fff0000000000000"])
def test_rfc8785_refuses_nan_and_infinities(bits: str) -> None:
    """The NaN and infinity bit patterns of Appendix B have no canonical form."""
    with pytest.raises(CanonicalError):
        canonical_json({"n": from_bits(bits)})
    with pytest.raises(CanonicalError):
        fast_digest({"n": from_bits(bits)})


def test_rfc8785_sorting_example() -> None:
    """Keys sort by UTF-16 code units: U+1F600 (a surrogate pair) before U+FB33 (section 3.2.3)."""
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    expected = (
        '{"\\r":"Carriage Return","1":"One","\u0080":"Control",'
        '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",'
        '"\U0001f600":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}'
    )
    assert canonical_json(value) == expected == jcs(value)
    assert fast_digest(value) == digest(value)
    # Code-point order (the legacy form) puts U+FB33 first: the two forms differ here.
    assert legacy_canonical_json(value).index("\ufb33") < legacy_canonical_json(value).index(
        "\U0001f600"
    )


def test_rfc8785_main_example_numbers_and_escaping() -> None:
    """Section 3.2.2's example: numbers in ECMAScript form, only the required escapes."""
    text = (
        '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",'
        ' "literals": [null, true, false]}'
    )
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    value = json.loads(text)
    assert canonical_json(value) == expected == jcs(value)
    assert fast_digest(value) == digest(value)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (1e-7, "1e-7"),
        (1e21, "1e+21"),
        (0.00001, "0.00001"),
        (1e20, "100000000000000000000"),
        (-0.0, "0"),
        (1.5e300, "1.5e+300"),
        (123e-20, "1.23e-18"),
        ("\x00\x1f\x7f\u2028", '"\\u0000\\u001f\x7f\u2028"'),
        ('\b\t\n\f\r"\\/', '"\\b\\t\\n\\f\\r\\"\\\\/"'),
        ([1, 1.0, 0.1, 1e20, -2.5e-7], "[1,1,0.1,100000000000000000000,-2.5e-7]"),
    ],
)
def test_numbers_and_strings_are_written_as_ecmascript_does(value: Any, text: str) -> None:
    """Numbers take ECMAScript's form; strings escape only quote, backslash and controls."""
    assert canonical_json(value) == text == jcs(value)


@pytest.mark.parametrize(
    "bad", [2**53, -(2**53), 10**30, 10**5000], ids=["2^53", "-2^53", "1e30", "1e5000"]
)
def test_integers_beyond_2_53_are_refused(bad: int) -> None:
    """An integer outside ±(2**53 - 1) is refused, even one of 5,000 digits."""
    with pytest.raises(CanonicalError, match="outside"):
        canonical_json({"n": bad})
    with pytest.raises(CanonicalError, match="outside"):
        fast_digest({"n": bad})
    assert canonical_json([MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER]) == (
        "[9007199254740991,-9007199254740991]"
    )


@pytest.mark.parametrize("bad", [{"s": "a\ud800"}, {"\udfff": 1}, ["\ud83d\ude00"]])
def test_lone_surrogates_are_refused(bad: Any) -> None:
    """A string or key holding a surrogate code point (even a would-be pair) is refused."""
    with pytest.raises(CanonicalError, match="surrogate"):
        canonical_json(bad)
    with pytest.raises(CanonicalError, match="surrogate"):
        fast_digest(bad)


def test_non_string_keys_are_refused_on_the_fast_path_too() -> None:
    """fast_digest refuses {1: ...} as digest does (the C encoder alone would write "1")."""
    for bad in ({1: "x"}, {"a": FrozenDict({True: 1})}, [{None: 1}]):
        with pytest.raises(CanonicalError, match="key must be a string"):
            fast_digest(bad)


def test_very_deep_values_are_written_without_recursion() -> None:
    """A value nested 100,000 deep has a canonical form (the serialiser does not recurse)."""
    value: Any = 1
    for _ in range(100_000):
        value = {"a": [value]}
    text = canonical_json(value)
    assert text.startswith('{"a":[{"a":[') and len(text) == 100_000 * 8 + 1
    assert fast_digest(value) == digest(value)


def test_circular_values_are_refused() -> None:
    """A list that contains itself is refused, not serialised forever."""
    loop: list[Any] = [1]
    loop.append(loop)
    with pytest.raises(CanonicalError, match="circular"):
        canonical_json(loop)
    with pytest.raises(CanonicalError, match="circular"):
        fast_digest({"a": loop})


def test_a_value_seen_twice_is_not_a_cycle() -> None:
    """The same list twice side by side (no cycle) is written twice."""
    shared = [1, 2]
    assert canonical_json([shared, shared, {"a": shared}]) == '[[1,2],[1,2],{"a":[1,2]}]'


# --- agreement with the rfc8785 package -----------------------------------------------------


@settings(max_examples=examples(300), deadline=None)
@given(value=json_values())
def test_canonical_json_equals_the_rfc8785_package(value: Any) -> None:
    """For every JSON value within the limits, our text is the rfc8785 package's text."""
    assert canonical_json(value) == jcs(value)
    assert digest(value) == hashlib.sha256(rfc8785.dumps(value)).hexdigest()


@settings(max_examples=examples(300), deadline=None)
@given(value=finite_floats)
def test_every_finite_float_is_written_as_the_rfc8785_package_writes_it(value: float) -> None:
    """format_float agrees with the rfc8785 package on any double, and reads back exactly."""
    text = format_float(value)
    assert text == jcs(value)
    assert float(text) == value


out_of_range = (
    huge_integers
    | non_finite
    | surrogate_strings
    | st.builds(lambda s: {s: 1}, surrogate_strings)
    | st.builds(lambda c: [c], lone_surrogates)
)


@settings(max_examples=examples(200), deadline=None)
@given(bad=out_of_range, around=json_values(max_leaves=5), at_key=json_strings(4))
def test_both_implementations_refuse_the_same_values(bad: Any, around: Any, at_key: str) -> None:
    """Huge integers, NaN, infinities and lone surrogates, anywhere, are refused by both."""
    value = {"around": around, at_key: [bad]}
    with pytest.raises(CanonicalError):
        canonical_json(value)
    with pytest.raises(CanonicalError):
        fast_digest(value)
    # The package raises its own error, or ValueError formatting a 5,000-digit integer.
    with pytest.raises((rfc8785.CanonicalizationError, ValueError)):
        rfc8785.dumps(value)


# --- the fast path equals the exact one -----------------------------------------------------

aware_times = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
) | st.datetimes(
    min_value=datetime(1970, 1, 2),
    max_value=datetime(2200, 1, 1),
    timezones=st.sampled_from(
        [timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]
    ),
)
core_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)  # crosses ±(2**53 - 1): refusals must agree too
    | finite_floats
    | json_strings()
    | st.binary(max_size=8)
    | aware_times
)
core_values = st.recursive(
    core_scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(json_strings(4), inner, max_size=4)
        | st.dictionaries(json_strings(4), inner, max_size=4).map(FrozenDict)
        | st.dictionaries(json_strings(4), inner, max_size=4).map(MappingProxyType)
    ),
    max_leaves=20,
)


def outcome(fn: Any, value: Any) -> str:
    """The digest, or the refusal's message."""
    try:
        return str(fn(value))
    except CanonicalError as exc:
        return f"refused: {exc}"


@settings(max_examples=examples(400), deadline=None)
@given(value=core_values)
def test_fast_digest_equals_digest(value: Any) -> None:
    """The C-encoder event digest equals the exact RFC 8785 digest, or both refuse alike."""
    assert outcome(fast_digest, value) == outcome(digest, value)


@settings(max_examples=examples(200), deadline=None)
@given(value=core_values)
def test_legacy_fast_digest_equals_legacy_digest(value: Any) -> None:
    """The old event hash and the old exact digest agree on string-keyed values (as they did)."""
    try:
        expected = legacy_digest(value)
    except CanonicalError:
        return
    assert legacy_fast_digest(value) == expected


# --- the legacy form and digest_matches -----------------------------------------------------


def test_legacy_form_is_the_old_canonical_json() -> None:
    """The legacy text writes floats as repr and sorts by code point, as before RFC 8785."""
    value = {"b": [1, 1.0, 0.1, 1e20, -2.5e-7], "\ufb33": 1, "\U0001f600": 2}
    assert legacy_canonical_json(value) == (
        '{"b":[1,1.0,0.1,1e+20,-2.5e-07],"\ufb33":1,"\U0001f600":2}'
    )
    old = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert legacy_digest(value) == hashlib.sha256(old.encode()).hexdigest()
    assert legacy_fast_digest(value) == legacy_digest(value) != digest(value)


def test_digest_matches_accepts_either_form_of_the_same_value() -> None:
    """A digest made in the legacy form or in RFC 8785 matches; another value's does not."""
    value = {"params": {"ratio": 1.0, "tiny": 1e-7}, "at": datetime(2026, 1, 1, tzinfo=UTC)}
    assert legacy_digest(value) != digest(value)
    assert digest_matches(value, digest(value))
    assert digest_matches(value, legacy_digest(value))
    assert digest_matches(freeze(value), legacy_fast_digest(freeze(value)))
    edited = {"params": {"ratio": 1.5, "tiny": 1e-7}, "at": datetime(2026, 1, 1, tzinfo=UTC)}
    assert not digest_matches(edited, digest(value))
    assert not digest_matches(edited, legacy_digest(value))
    assert not digest_matches(value, "0" * 64)


def test_digest_matches_never_raises() -> None:
    """A value without a form in one scheme (or in both) matches there not at all."""
    assert not digest_matches({"n": math.nan}, "0" * 64)
    assert not digest_matches({1: 2}, "0" * 64)
    big = {"n": 2**60}  # legacy wrote it; RFC 8785 refuses it
    assert digest_matches(big, legacy_digest(big))


def test_digest_forms_lists_each_form_once() -> None:
    """digest_forms gives RFC 8785 then legacy; one entry when they agree, none without a form."""
    assert digest_forms({"a": 1.0}) == (digest({"a": 1.0}), legacy_digest({"a": 1.0}))
    assert digest_forms({"a": 1}) == (digest({"a": 1}),)
    assert digest_forms({"n": 2**60}) == (legacy_digest({"n": 2**60}),)
    assert digest_forms({"n": math.nan}) == ()


def test_a_policy_version_made_before_rfc8785_is_among_the_forms() -> None:
    """A policy with floats changes version with the form; the old one is still recognisable."""
    policy = ApprovalPolicy(default=ApprovalRule(roles=("approver",), approvals=2))
    old_version = legacy_digest(policy.to_plain())[:16]
    assert policy.version != old_version  # max_evidence_age is a float: 900.0 vs 900
    assert {policy.version, old_version} == {d[:16] for d in digest_forms(policy.to_plain())}


@settings(max_examples=examples(200), deadline=None)
@given(value=json_values(), other=json_values())
def test_digest_matches_only_the_value_it_was_made_from(value: Any, other: Any) -> None:
    """Both forms of a value match it; a digest of a different value matches in neither form."""
    for made in (digest(value), legacy_digest(value)):
        assert digest_matches(value, made)
        if json.loads(canonical_json(other)) != json.loads(canonical_json(value)):
            assert not digest_matches(other, made)


# --- the vectors in docs/records.md ---------------------------------------------------------


def documented_vectors() -> list[tuple[str, str, str]]:
    """(input JSON, canonical text, sha256) rows of the test-vector table in docs/records.md."""
    section = RECORDS_MD.read_text().split("### Test vectors", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `(.+?)` \| `(.+?)` \| `([0-9a-f]{64})` \|$", section, re.MULTILINE)
    return [(a, b, c) for a, b, c in rows]


def test_docs_list_test_vectors() -> None:
    """docs/records.md carries a dozen or so vectors, so readers can check an implementation."""
    assert len(documented_vectors()) >= 8


@pytest.mark.parametrize(("source", "text", "sha"), documented_vectors())
def test_documented_vectors_hold(source: str, text: str, sha: str) -> None:
    """Each documented input has the documented canonical text and sha256, here and in rfc8785."""
    value = json.loads(source)
    assert canonical_json(value) == text == jcs(value)
    assert digest(value) == sha == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert fast_digest(value) == sha


def test_a_digest_matches_only_whole() -> None:
    """A digest that shares a prefix with the value's digest, in either form, does not match:
    the whole 64 characters are compared (an identifier cut from a digest is compared by its
    own rule, ``digest_forms``)."""
    value = {"action": "restart", "n": 1.0}
    for made in (digest(value), legacy_digest(value)):
        assert digest_matches(value, made)
        assert not digest_matches(value, made[:16] + "0" * 48)
        assert not digest_matches(value, made[:63] + ("0" if made[63] != "0" else "1"))
        assert not digest_matches(value, made[:16])


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_the_legacy_form_has_no_text_for_what_json_cannot_hold(bad: float) -> None:
    """NaN and the infinities had no digest before RFC 8785 either: no legacy digest is made
    of them, so none can match."""
    with pytest.raises(ValueError):
        legacy_digest({"x": bad})
    with pytest.raises(ValueError):
        legacy_fast_digest({"x": bad})
    assert digest_forms({"x": bad}) == ()
    assert not digest_matches({"x": bad}, hashlib.sha256(b'{"x":NaN}').hexdigest())
