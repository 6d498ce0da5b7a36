"""The input boundary: check() and parse_json() name every limit a value or a text breaks, never
raise, never recurse, and agree with the canonical form."""

from __future__ import annotations

import json
import math
import re
from dataclasses import astuple
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from budget import examples
from stopline.core.artifacts import Artifact, Asset
from stopline.core.canonical import CanonicalError, canonical_json
from stopline.core.json_input import parse_json
from stopline.core.limits import CODES, DEFAULT, Limits, Violation, check
from strategies import MAX_SAFE_INTEGER, hostile_json_texts, hostile_values, json_values, nest

RECORDS_MD = Path(__file__).resolve().parents[2] / "docs" / "records.md"
# Small limits, so generated values cross every one of them without building megabytes.
SMALL = Limits(
    max_depth=6,
    max_bytes=150,
    max_string_length=30,
    max_key_length=8,
    max_members=6,
    max_text_bytes=3000,
    max_violations=1000,
)


def codes(violations: list[Violation]) -> list[tuple[str, str]]:
    return [(v.path, v.limit) for v in violations]


# --- an independent oracle: the canonical form, then the structure of the document -----------


def outside(value: Any, limits: Limits) -> bool:
    """Whether ``value`` breaks ``limits``, judged without check(): canonical_json refuses it,
    its canonical text is too long, or the canonical document is too deep, wide or long."""
    try:
        text = canonical_json(value)
    except CanonicalError:
        return True
    if len(text.encode("utf-8")) > limits.max_bytes:
        return True
    return structure_outside(json.loads(text), limits, 0)


def structure_outside(doc: Any, limits: Limits, depth: int) -> bool:
    if isinstance(doc, str):
        return len(doc) > limits.max_string_length
    if isinstance(doc, list | dict):
        if depth + 1 > limits.max_depth or len(doc) > limits.max_members:
            return True
        if isinstance(doc, dict):
            if any(len(k) > limits.max_key_length for k in doc):
                return True
            doc = list(doc.values())
        return any(structure_outside(child, limits, depth + 1) for child in doc)
    return False


def text_outside(raw: str | bytes, limits: Limits) -> bool:
    """Whether JSON text breaks ``limits``: not UTF-8, too long, not strict JSON (no NaN
    tokens, no duplicate keys, parseable), or its value is :func:`outside`."""
    if isinstance(raw, bytes):
        if len(raw) > limits.max_text_bytes:
            return True
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return True
    else:
        text = raw
        if len(text.encode("utf-8", "surrogatepass")) > limits.max_text_bytes:
            return True

    def no_constants(name: str) -> Any:
        raise ValueError(name)

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({k for k, _ in pairs}) != len(pairs):
            raise ValueError("duplicate key")
        return dict(pairs)

    try:
        value = json.loads(text, parse_constant=no_constants, object_pairs_hook=no_duplicates)
    except (ValueError, RecursionError):
        return True
    return outside(value, limits)


# --- properties -----------------------------------------------------------------------------


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=hostile_values())
def test_check_reports_a_violation_iff_the_value_is_outside_the_limits(value: Any) -> None:
    """check() never raises, and finds a violation exactly when the oracle says 'outside'."""
    found = check(value, SMALL)
    assert bool(found) == outside(value, SMALL), found
    assert all(v.limit in CODES and v.path.startswith("$") for v in found)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=hostile_values(max_string=400, max_members=12, max_depth=80))
def test_every_value_check_accepts_has_a_canonical_form(value: Any) -> None:
    """The boundary and the canonical form agree: accepted by check() => canonical_json works."""
    if not check(value):
        assert len(canonical_json(value).encode("utf-8")) <= DEFAULT.max_bytes


@settings(max_examples=examples(200), deadline=None)
@given(value=json_values())
def test_plain_json_within_the_defaults_is_accepted(value: Any) -> None:
    """Ordinary JSON values (small, finite, valid Unicode) pass the default limits."""
    assert check(value) == []


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=hostile_json_texts())
def test_parse_json_reports_a_violation_iff_the_text_is_outside_the_limits(
    raw: str | bytes,
) -> None:
    """parse_json() never raises; it refuses exactly the texts the oracle refuses."""
    value, found = parse_json(raw, SMALL)
    assert bool(found) == text_outside(raw, SMALL), found
    if not found:
        canonical_json(value)  # a value that passed is usable as it is


def big_integral_floats(value: Any) -> bool:
    """Whether ``value`` holds a float RFC 8785 writes as integer digits beyond 2**53 - 1
    (below 1e21 it writes no exponent)."""
    if isinstance(value, float):
        return value.is_integer() and MAX_SAFE_INTEGER < abs(value) < 1e21
    if isinstance(value, dict):
        value = list(value.values())
    return isinstance(value, list) and any(big_integral_floats(v) for v in value)


@settings(max_examples=examples(200), deadline=None)
@given(value=json_values())
def test_parse_json_reads_back_what_canonical_json_writes(value: Any) -> None:
    """A canonical document parses back to an equal value with no violation, except that an
    integral float beyond 2**53 - 1 (written as integer digits) comes back out of range."""
    parsed, found = parse_json(canonical_json(value).encode("utf-8"))
    if big_integral_floats(value):
        assert found and {v.limit for v in found} <= {"integer_range", "..."}
        return
    assert found == []
    assert canonical_json(parsed) == canonical_json(value)


def test_an_integer_token_beyond_2_53_is_refused_even_if_a_double_holds_it() -> None:
    """`100000000000000000000` (how ECMAScript writes 1e20) is an integer out of range."""
    assert canonical_json(1e20) == "100000000000000000000"
    assert codes(parse_json("100000000000000000000")[1]) == [("$", "integer_range")]
    assert parse_json("1e20") == (1e20, [])


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=hostile_values(max_string=60))
def test_the_bytes_limit_is_the_exact_canonical_size(value: Any) -> None:
    """For any value with a canonical form, max_bytes = its size passes and size - 1 does not."""
    try:
        size = len(canonical_json(value).encode("utf-8"))
    except CanonicalError:
        return
    roomy = {"max_depth": 1000, "max_string_length": 10**6, "max_members": 10**6}
    assert check(value, Limits(max_bytes=size, **roomy)) == []
    if size > 1:
        assert codes(check(value, Limits(max_bytes=size - 1, **roomy))) == [("$", "bytes")]


@pytest.mark.parametrize(
    ("field", "at_limit", "over"),
    [
        ("max_depth", nest(1, 3), nest(1, 4)),
        ("max_depth", nest(b"x", 2), nest(b"x", 3)),  # bytes are the object {"$bytes": ...}
        ("max_string_length", "é" * 3, "é" * 4),
        ("max_string_length", b"xy", b"xyz1"),  # 4 vs 8 base64 characters
        ("max_key_length", {"abc": 1}, {"abcd": 1}),
        ("max_members", [1, 2, 3], [1, 2, 3, 4]),
        ("max_members", {"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2, "c": 3, "d": 4}),
    ],
)
def test_each_limit_is_inclusive(field: str, at_limit: Any, over: Any) -> None:
    """A value exactly at a limit passes; one step over it is named by the limit's code."""
    limit = {"max_depth": 3, "max_string_length": 3, "max_key_length": 3, "max_members": 3}[field]
    if field == "max_string_length" and isinstance(at_limit, bytes):
        limit = 4
    limits = Limits(**{field: limit})
    assert check(at_limit, limits) == []
    code = {"max_depth": "depth", "max_key_length": "key_length"}.get(field, field[4:])
    assert [v.limit for v in check(over, limits)] == [code]


# --- examples -------------------------------------------------------------------------------


def test_violations_name_the_path_and_the_limit() -> None:
    """Each violation names the JSON path of the offending member and a stable code."""
    value = {
        "params": {
            "a": [0, 1, 2, math.nan],
            "b c": 2**60,
            "s": "x\ud800",
            "long": "x" * 31,
            "k" * 9: True,
        },
        7: "key",
        "deep": nest(1, 7),
        "wide": list(range(7)),
    }
    # An object's own violations (its keys, its width) come before those of its members.
    assert codes(check(value, SMALL)) == [
        ("$", "key_type"),
        ("$.params.kkkkkkkkk", "key_length"),
        ("$.params.a[3]", "not_finite"),
        ('$.params["b c"]', "integer_range"),
        ("$.params.s", "unicode"),
        ("$.params.long", "string_length"),
        ("$.deep[0][0][0][0][0]", "depth"),
        ("$.wide", "members"),
    ]


def test_a_100000_deep_structure_is_one_depth_violation() -> None:
    """Nesting 100,000 deep is measured without recursion and reported once."""
    for as_object in (False, True):
        found = check(nest(1, 100_000, as_object))
        assert [v.limit for v in found] == ["depth"]
        assert found[0].path.count("[0]" if not as_object else ".k") == 64


def test_a_cycle_is_a_depth_violation_not_a_hang() -> None:
    """A list that contains itself stops at the depth limit."""
    loop: list[Any] = []
    loop.append(loop)
    assert [v.limit for v in check(loop)] == ["depth"]


def test_violations_are_bounded_with_a_final_ellipsis() -> None:
    """Past max_violations the list ends with one '...' entry."""
    found = check([math.inf] * 50)
    assert len(found) == DEFAULT.max_violations + 1
    assert found[-1].limit == "..." and found[-2].path == "$[19]"


def test_bytes_count_the_canonical_document() -> None:
    """The bytes limit is the UTF-8 length of the canonical JSON, escapes and all."""
    value = {"x": "é\n" * 10, "k": [1.0, 1e-7, None, True, b"\x00\xff"], "at": datetime.now(UTC)}
    size = len(canonical_json(value).encode("utf-8"))
    assert check(value, Limits(max_bytes=size)) == []
    assert codes(check(value, Limits(max_bytes=size - 1))) == [("$", "bytes")]


def test_times_bytes_tuples_and_to_plain_objects_are_checked_as_their_canonical_form() -> None:
    """Aware times, bytes, tuples and objects with to_plain() pass; naive times do not."""
    artifact = Artifact("k", "T", "S", "B", (Asset("a.png", "image/png", b"\x89PNG"),))
    assert check({"at": datetime.now(UTC), "raw": b"\x00", "t": (1, 2), "a": artifact}) == []
    assert codes(check({"at": datetime(2026, 1, 1)})) == [("$.at", "type")]
    assert codes(check({"s": {1, 2}, "o": object()})) == [("$.s", "type"), ("$.o", "type")]
    big = b"x" * 30
    assert codes(check({"b": big}, SMALL)) == [('$.b["$bytes"]', "string_length")]


def test_check_never_raises_on_hostile_objects() -> None:
    """An object whose len() or to_plain() raises is a violation, not an exception."""

    class BadLen(list[Any]):
        def __len__(self) -> int:
            raise RuntimeError("no")

    class BadPlain:
        def to_plain(self) -> Any:
            raise RuntimeError("no")

    assert [v.limit for v in check({"a": BadLen()})] == ["type"]
    assert codes(check({"a": BadPlain()})) == [("$.a", "type")]


def test_integer_range_is_inclusive() -> None:
    """±(2**53 - 1) pass; one more does not."""
    assert check([MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER]) == []
    assert [v.limit for v in check([MAX_SAFE_INTEGER + 1, -MAX_SAFE_INTEGER - 1])] == [
        "integer_range",
        "integer_range",
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": NaN}', [("$.a", "not_finite")]),
        ('{"a": [Infinity, -Infinity]}', [("$.a[0]", "not_finite"), ("$.a[1]", "not_finite")]),
        ('{"a": 1e999}', [("$.a", "not_finite")]),
        ('{"a": ' + "1" * 5000 + "}", [("$.a", "integer_range")]),
        ('{"a": 9007199254740992}', [("$.a", "integer_range")]),
        ('{"a": "\\ud800"}', [("$.a", "unicode")]),
        ('{"a": 1, "a": 2}', [("$.a", "duplicate_key")]),
        ("[" * 100_000 + "]" * 100_000, [("$", "depth")]),
        ("[" * 70 + "]" * 70, [("$" + "[0]" * 64, "depth")]),
        (b'{"a": "\xff"}', [("$", "unicode")]),
        (b'"\xed\xa0\x80"', [("$", "unicode")]),
        ('{"a": 1', [("$", "syntax")]),
        ("", [("$", "syntax")]),
        ("\ufeff{}", [("$", "syntax")]),
        (b"\xff\xfe{\x00}\x00", [("$", "unicode")]),  # UTF-16 is not read as JSON
        ('"' + "x" * 300_000 + '"', [("$", "string_length")]),
    ],
)
def test_parse_json_turns_hostile_text_into_violations(
    raw: str | bytes, expected: list[tuple[str, str]]
) -> None:
    """NaN, 1e999, 5,000 digits, surrogates, duplicate keys, deep nesting, bad UTF-8: violations."""
    _, found = parse_json(raw)
    assert codes(found) == expected


def test_parse_json_refuses_text_over_max_text_bytes_unparsed() -> None:
    """Text longer than max_text_bytes is refused before parsing, as str or bytes."""
    limits = Limits(max_text_bytes=100)
    text = json.dumps(["x" * 200])
    assert codes(parse_json(text, limits)[1]) == [("$", "bytes")]
    assert codes(parse_json(text.encode(), limits)[1]) == [("$", "bytes")]
    assert codes(parse_json(json.dumps(["é" * 40]), limits)[1]) == [("$", "bytes")]


def test_parse_json_refuses_what_is_not_text() -> None:
    """Neither str nor bytes: a type violation, not an exception."""
    assert codes(parse_json(12)[1]) == [("$", "type")]  # type: ignore[arg-type]


def test_limits_must_be_positive_integers() -> None:
    """A Limits with a zero or non-integer field is a programming error, refused at once."""
    with pytest.raises(ValueError, match="max_depth"):
        Limits(max_depth=0)
    with pytest.raises(ValueError, match="max_bytes"):
        Limits(max_bytes=1.5)  # type: ignore[arg-type]


def test_docs_table_matches_the_defaults() -> None:
    """docs/records.md documents every code and the default of every limit."""
    text = RECORDS_MD.read_text()
    section = text.split("## Limits on input from outside", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"\| `([a-z_.]+)` \|$", section, re.MULTILINE))
    assert documented == set(CODES)
    assert astuple(DEFAULT) == (64, 1_048_576, 262_144, 256, 10_000, 8 * 1_048_576, 20)
    for shown in ("| 64 |", "1,048,576", "262,144", "| 256 |", "| 10,000 |", "8 MiB", "| 20,"):
        assert shown in section


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("1e999", "not_finite: '1e999' is beyond the range of a double"),
        ("[-1e400]", "not_finite: '-1e400' is beyond the range of a double"),
        ("NaN", "not_finite: NaN is not a number JSON allows"),
        ('{"x": -Infinity}', "not_finite: -Infinity is not a number JSON allows"),
        ("1" + "0" * 25, "integer_range: integer of 26 digits"),
        ("-" + "9" * 20, "integer_range: integer of 20 digits"),
        ("1" + "0" * 5000, "integer_range: integer of 5001 digits"),  # past int()'s own limit
    ],
)
def test_a_number_json_cannot_carry_is_named_as_it_was_sent(text: str, says: str) -> None:
    """The violation quotes the token the client sent, not what a parser made of it (``inf``,
    ``nan``, or a 5,001-digit integer that ``int()`` refuses to read at all)."""
    _, violations = parse_json(text)
    assert [str(v).split(": ", 1)[1] for v in violations] == [says]


def test_the_text_limit_counts_utf8_bytes_to_the_byte() -> None:
    """Exactly ``max_text_bytes`` is read, one byte more is refused unread, as bytes or as
    text; text of fewer characters than the limit but more UTF-8 bytes is refused too."""
    limits = Limits(max_text_bytes=1000, max_string_length=10_000)
    exact = b'"' + b"a" * 998 + b'"'
    assert parse_json(exact, limits) == ("a" * 998, [])
    assert parse_json(exact.decode(), limits) == ("a" * 998, [])
    for over in (b'"' + b"a" * 999 + b'"', ('"' + "é" * 500 + '"').encode()):
        for sent in (over, over.decode()):
            value, violations = parse_json(sent, limits)
            assert value is None and [v.limit for v in violations] == ["bytes"], sent[:5]
