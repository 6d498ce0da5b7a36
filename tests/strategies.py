"""Hypothesis strategies for JSON values and JSON text, well-formed and hostile.

For every fuzz test that feeds stopline input from outside (the core, the CLI, the HTTP API):

* ``json_values()``: plain JSON values the canonical form represents exactly (integers within
  ±(2**53 - 1), finite floats, valid Unicode with the characters RFC 8785 treats specially);
* ``hostile_values()``: the same mixed with what an attacker sends: NaN and infinities, huge
  integers, lone surrogates, non-string keys, deep nesting, long strings and keys, wide
  containers, bytes, times with and without a zone, types JSON has no form for;
* ``hostile_json_texts()``: JSON text (``str`` or ``bytes``) with ``NaN``/``Infinity`` tokens,
  ``1e999``, thousands of digits, ``\\ud800`` escapes, invalid UTF-8, nesting 100,000 deep,
  duplicate keys, huge strings and broken syntax.

Sizes are parameters, so a test against small :class:`stopline.core.limits.Limits` can cross
every limit without building megabytes.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

MAX_SAFE_INTEGER = 2**53 - 1

safe_integers = st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
# Floats whose RFC 8785 form differs from repr (integral, exponents) or sits on a boundary.
special_floats = st.sampled_from(
    [
        0.0,
        -0.0,
        1.0,
        -2.0,
        1e-7,
        1e-6,
        1e-5,
        1e-4,
        1e15,
        1e16,
        1e20,
        1e21,
        1e22,
        1e23,
        5e-324,
        1.7976931348623157e308,
        9007199254740992.0,
        0.1,
        333333333.3333333,
    ]
)
finite_floats = st.floats(allow_nan=False, allow_infinity=False) | special_floats
# Characters RFC 8785 escapes or sorts specially: quote, backslash, controls, DEL, the line
# separators, BMP characters at and above U+E000 and characters beyond the BMP (UTF-16 order).
special_chars = st.sampled_from(
    [
        '"',
        "\\",
        "/",
        "\n",
        "\r",
        "\t",
        "\b",
        "\f",
        "\x00",
        "\x1f",
        "\x7f",
        "\x80",
        "\u2028",
        "\u20ac",
        "\ue000",
        "\ufb33",
        "\uffff",
        "\U00010000",
        "\U0001f600",
        "\U0010ffff",
        "é",
    ]
)
valid_chars = st.characters(codec="utf-8") | special_chars  # no surrogates
lone_surrogates = st.characters(categories=["Cs"])


def json_strings(max_size: int = 12) -> st.SearchStrategy[str]:
    return st.text(valid_chars, max_size=max_size)


json_scalars = st.none() | st.booleans() | safe_integers | finite_floats | json_strings()


def json_values(max_leaves: int = 25, max_members: int = 5) -> st.SearchStrategy[Any]:
    """Plain JSON values within the canonical form (string keys, no tuples or bytes)."""
    return st.recursive(
        json_scalars,
        lambda inner: (
            st.lists(inner, max_size=max_members)
            | st.dictionaries(json_strings(6), inner, max_size=max_members)
        ),
        max_leaves=max_leaves,
    )


# --- hostile values ------------------------------------------------------------------------------

huge_integers = (
    st.integers(min_value=MAX_SAFE_INTEGER + 1)
    | st.integers(max_value=-MAX_SAFE_INTEGER - 1)
    | st.sampled_from([2**53, -(2**53), 2**64, 10**400])
    | st.integers(4_000, 6_000).map(lambda digits: 10**digits)  # past int()'s 4300 digits
)
non_finite = st.sampled_from([math.nan, math.inf, -math.inf])
surrogate_strings = st.builds(
    lambda a, s, b: a + s + b, json_strings(4), lone_surrogates, json_strings(4)
)
times = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)
naive_times = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1))
no_json_form = st.sampled_from([{1, 2}, frozenset(), Decimal("1.5"), object(), 1j, ...])


def hostile_scalars(max_string: int = 40) -> st.SearchStrategy[Any]:
    return (
        json_scalars
        | st.text(valid_chars, min_size=max_string // 2, max_size=max_string)
        | huge_integers
        | non_finite
        | surrogate_strings
        | st.binary(max_size=max_string)
        | times
        | naive_times
        | no_json_form
    )


hostile_keys = (
    json_strings(6)
    | st.text(valid_chars, min_size=5, max_size=12)
    | surrogate_strings
    | st.integers()
    | st.booleans()
    | st.none()
    | st.floats()
    | st.tuples(st.integers())
)


def nest(value: Any, depth: int, as_object: bool = False) -> Any:
    """``value`` inside ``depth`` arrays (or objects), built without recursion."""
    for _ in range(depth):
        value = {"k": value} if as_object else [value]
    return value


def hostile_values(
    max_leaves: int = 20, max_members: int = 8, max_depth: int = 12, max_string: int = 40
) -> st.SearchStrategy[Any]:
    """Values from outside, many of them beyond some limit or without a canonical form."""
    return st.recursive(
        hostile_scalars(max_string),
        lambda inner: (
            st.lists(inner, max_size=max_members)
            | st.lists(inner, max_size=max_members).map(tuple)
            | st.dictionaries(hostile_keys, inner, max_size=max_members)
            | st.builds(nest, inner, st.integers(0, max_depth), st.booleans())
        ),
        max_leaves=max_leaves,
    )


# --- hostile JSON text ---------------------------------------------------------------------------


def _deep_text(depth: int, opener: str) -> str:
    closer = {"[": "]", '{"a":': "}"}[opener]
    return opener * depth + "1" + closer * depth


def _with_bad_bytes(text: str, cut: int, bad: bytes) -> bytes:
    raw = text.encode("utf-8")
    cut %= len(raw) + 1
    return raw[:cut] + bad + raw[cut:]


bad_utf8 = st.sampled_from(
    [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80", b"\x80", b"\xfe"]
)
json_tokens = st.sampled_from(
    [
        "NaN",
        "-NaN",
        "Infinity",
        "-Infinity",
        "1e999",
        "-1e999",
        "1E400",
        "1" * 5000,
        "-" + "9" * 30,
        '"\\ud800"',
        '"a\\udfffb"',
        '"\\ud83d\\ude00"',
        "9007199254740992",
        "-9007199254740991",
        "1.0",
        "1e-7",
        "0.00001",
        "[]",
        "{}",
        "null",
        "true",
        '"x"',
        '{"a":1,"a":2}',
    ]
)


def hostile_json_texts(max_string: int = 40, max_depth: int = 12) -> st.SearchStrategy[str | bytes]:
    """JSON text an attacker sends, as ``str`` or UTF-8 (or not UTF-8) ``bytes``."""
    from_values = hostile_values(max_depth=max_depth, max_string=max_string).map(_dumps)
    documents = (
        json_values().map(json.dumps)
        | from_values.filter(lambda text: text is not None)
        | st.builds(
            lambda items: "[" + ",".join(items) + "]", st.lists(json_tokens, min_size=1, max_size=4)
        )
        | st.builds(
            lambda key, token: "{" + json.dumps(key) + ":" + token + "}",
            json_strings(6),
            json_tokens,
        )
        | st.builds(
            _deep_text,
            st.integers(0, max_depth * 2) | st.just(100_000),
            st.sampled_from(["[", '{"a":']),
        )
        | st.text(max_size=20)  # mostly not JSON at all
        | st.builds(lambda n: json.dumps("x" * n), st.integers(0, max_string * 2))
    )
    as_bytes = documents.map(lambda text: text.encode("utf-8", "surrogatepass"))
    broken = st.builds(_with_bad_bytes, documents, st.integers(0, 1000), bad_utf8)
    truncated = st.builds(lambda text, cut: text[: cut % (len(text) + 1)], documents, st.integers())
    return documents | as_bytes | broken | truncated | st.binary(max_size=30)


def _dumps(value: Any) -> str | None:
    """JSON text of a hostile value as a careless client writes it (NaN tokens and all)."""
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError, RecursionError):
        return None
