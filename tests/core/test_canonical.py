"""Canonical JSON and digests: the rules of ``canonical.py``, and digests anyone can recompute."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stopline.core.artifacts import Artifact, Asset, Readback, content_hash
from stopline.core.canonical import (
    CanonicalError,
    canonical_json,
    digest,
    format_time,
    json_number,
    parse_time,
    to_plain,
)
from stopline.core.fast_digest import fast_digest
from stopline.core.frozen import freeze, thaw

from .helpers import Harness, art


def recompute(value: Any) -> str:
    """A digest as a reader computes it with an independent RFC 8785 implementation."""
    return hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def shown(h: Harness) -> dict[str, Any]:
    """The item as ``stopline show --json`` hands it over: plain JSON, parsed back."""
    result: dict[str, Any] = json.loads(canonical_json(h.it.to_plain()))
    return result


def test_keys_are_sorted_and_separators_compact() -> None:
    """Object keys come out sorted by code point with no whitespace; arrays keep their order."""
    value = {"b": 1, "a": [3, 1, 2], "B": {"z": None, "y": True, "x": False}}
    assert canonical_json(value) == '{"B":{"x":false,"y":true,"z":null},"a":[3,1,2],"b":1}'


def test_sorting_is_by_utf16_code_units() -> None:
    """Upper case sorts before lower case, accented letters after ASCII, and a character beyond
    the BMP (a surrogate pair in UTF-16) before U+FB33."""
    assert canonical_json({"é": 1, "e": 2, "E": 3}) == '{"E":3,"e":2,"é":1}'
    assert canonical_json({"\ufb33": 1, "\U0001f600": 2}) == '{"\U0001f600":2,"\ufb33":1}'


def test_non_ascii_is_kept_as_is() -> None:
    """Non-ASCII characters are written as UTF-8, never as \\u escapes."""
    text = canonical_json({"note": "café — 東京 ✓"})
    assert text == '{"note":"café — 東京 ✓"}'
    assert "\\u" not in text
    assert digest({"note": "café"}) == hashlib.sha256('{"note":"café"}'.encode()).hexdigest()


def test_times_are_utc_with_z_and_microseconds() -> None:
    """An aware time becomes RFC 3339 UTC with six fractional digits and a Z."""
    plus_two = timezone(timedelta(hours=2))
    assert format_time(datetime(2026, 11, 29, 23, 39, 20, tzinfo=plus_two)) == (
        "2026-11-29T21:39:20.000000Z"
    )
    value = {"at": datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)}
    assert canonical_json(value) == '{"at":"2026-01-02T03:04:05.000006Z"}'


def test_remembered_times_are_formatted_as_themselves() -> None:
    """Formatting remembers times it has seen; an equal instant in another zone writes the same
    text, a naive time is refused every time, and a subclass that claims to equal another time
    is formatted as its own value, never as the remembered one."""
    at = datetime(2026, 3, 4, 5, 6, 7, 8, tzinfo=UTC)
    same = at.astimezone(timezone(timedelta(hours=-3)))
    assert format_time(at) == format_time(same) == "2026-03-04T05:06:07.000008Z"
    for _ in range(2):
        with pytest.raises(CanonicalError, match="naive"):
            format_time(datetime(2026, 3, 4, 5, 6, 7, 8))

    class Liar(datetime):
        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return hash(at)

    other = Liar(2030, 1, 1, tzinfo=UTC)
    assert format_time(other) == "2030-01-01T00:00:00.000000Z"


def test_parse_time_inverts_format_time() -> None:
    """parse_time(format_time(t)) is t, in UTC."""
    t = datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=timezone(timedelta(hours=-5)))
    back = parse_time(format_time(t))
    assert back == t and back.utcoffset() == timedelta(0)
    with pytest.raises(CanonicalError):
        parse_time("2026-05-06T07:08:09")


def test_naive_datetime_is_refused() -> None:
    """A time without a zone has no canonical form."""
    with pytest.raises(CanonicalError, match="naive"):
        canonical_json({"at": datetime(2026, 1, 1, 12, 0)})
    with pytest.raises(CanonicalError):
        digest([datetime(2026, 1, 1)])


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinities_are_refused(bad: float) -> None:
    """NaN and infinities are refused, nested or not."""
    with pytest.raises(CanonicalError):
        canonical_json(bad)
    with pytest.raises(CanonicalError):
        digest({"a": [1, {"b": bad}]})


def test_numbers_are_written_as_ecmascript_writes_them() -> None:
    """Finite floats take ECMAScript's form (RFC 8785): 1.0 is 1, 1e20 has no exponent."""
    assert canonical_json([1, 1.0, 0.1, 1e20, -2.5e-7]) == "[1,1,0.1,100000000000000000000,-2.5e-7]"


def test_bytes_become_base64_objects() -> None:
    """Bytes, bytearray and memoryview all become {"$bytes": standard base64}."""
    expected = '{"$bytes":"AP8/+w=="}'
    raw = b"\x00\xff?\xfb"
    assert canonical_json(raw) == expected
    assert canonical_json(bytearray(raw)) == expected
    assert canonical_json(memoryview(raw)) == expected


@pytest.mark.parametrize("key", [1, 1.5, None, ("a",), True])
def test_non_string_keys_are_refused(key: Any) -> None:
    """Only string keys are allowed: {1: ...} and {"1": ...} must not collide."""
    with pytest.raises(CanonicalError, match="key must be a string"):
        canonical_json({key: 1})


@pytest.mark.parametrize("value", [{1, 2}, frozenset({"a"}), Decimal("1.5"), object()])
def test_values_without_a_canonical_form_are_refused(value: Any) -> None:
    """Sets, decimals and arbitrary objects raise CanonicalError."""
    with pytest.raises(CanonicalError, match="no canonical form"):
        canonical_json({"v": value})


def test_tuples_lists_and_frozen_values_agree() -> None:
    """Tuples are arrays; a frozen copy has the same canonical form as the original."""
    value = {"a": [1, (2, 3)], "m": {"x": [{"y": b"z"}]}}
    assert canonical_json(value) == canonical_json(freeze(value))
    assert canonical_json((1, 2)) == canonical_json([1, 2]) == "[1,2]"
    assert thaw(freeze(value)) == {"a": [1, [2, 3]], "m": {"x": [{"y": {"$bytes": "eg=="}}]}}


def test_objects_with_to_plain_are_serialised_through_it() -> None:
    """An Artifact digests as its plain form does."""
    a = Artifact("k", "T", "S", "B", (Asset("x.png", "image/png", b"\x89PNG"),))
    assert canonical_json(a) == canonical_json(a.to_plain())
    assert to_plain(a)["assets"][0]["data"] == "iVBORw=="


def test_digest_is_sha256_of_the_canonical_text() -> None:
    """digest() is lowercase hex SHA-256 of the UTF-8 canonical JSON."""
    value = {"z": 1, "a": "ü"}
    assert digest(value) == recompute(value)
    assert len(digest(value)) == 64 and digest(value) == digest(value).lower()


def test_proposal_and_evidence_digests_recompute_from_show(h: Harness) -> None:
    """The proposal and evidence digests follow from the shown documents alone."""
    h.discover()
    h.observe({"note": "café — 東京", "load": 0.97, "hosts": ["a", "b"]})
    h.propose({"grace": 5, "label": "naïve"})
    data = shown(h)["data"]
    proposal = data["proposal"]
    body = {k: v for k, v in proposal.items() if k not in ("digest", "approvals")}
    assert recompute(body) == proposal["digest"] == h.digest()
    evidence = data["evidence"]
    assert (
        recompute({"data": evidence["data"], "observed_at": evidence["observed_at"]})
        == (evidence["digest"])
    )
    assert proposal["evidence"] == [
        {"digest": evidence["digest"], "observed_at": evidence["observed_at"]}
    ]


def test_event_hashes_recompute_and_chain(h: Harness) -> None:
    """Each event's hash is the digest of its plain body; prev_hash links them."""
    h.to_awaiting()
    prev = ""
    for event in h.events:
        plain = json.loads(canonical_json(event.to_plain()))
        claimed = plain.pop("hash")
        assert recompute(plain) == claimed == event.hash
        assert plain["prev_hash"] == prev
        prev = claimed
    assert h.it.head == prev


def test_review_packet_and_content_hashes_recompute(h: Harness) -> None:
    """The review packet digest and each artifact's content hash follow from shown data."""
    h.to_completed([art("a", "ä body"), art("b")])
    data = shown(h)["data"]
    packet = data["review_packet"]
    body = {k: v for k, v in packet.items() if k not in ("digest", "void")}
    assert recompute(body) == packet["digest"] == h.packet()
    for record in data["artifacts"]:
        content = record["content"]
        fields = {
            "title": content["title"],
            "summary": content["summary"],
            "body": content["body"],
            "assets": [
                {k: a[k] for k in ("name", "media_type", "sha256")} for a in content["assets"]
            ],
        }
        assert recompute(fields) == record["content_hash"] == record["readback_hash"]


def test_readback_hash_equals_content_hash_of_the_same_fields() -> None:
    """A readback of exactly what was sent has the artifact's content hash; assets unordered."""
    assets = (Asset("b.txt", "text/plain", b"b"), Asset("a.txt", "text/plain", b"a"))
    sent = Artifact("k", "T", "S", "B", assets)
    seen = Readback("r", "v", "T", "S", "B", tuple(a.fingerprint() for a in reversed(assets)))
    assert seen.readback_hash == sent.content_hash
    assert content_hash("T", "S", "B2", [a.fingerprint() for a in assets]) != sent.content_hash


# --- property: key order never matters -------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53 - 1), 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.binary(max_size=8)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def reorder(value: Any, rnd: Any) -> Any:
    """The same value with every object's keys inserted in a random order."""
    if isinstance(value, dict):
        keys = list(value)
        rnd.shuffle(keys)
        return {k: reorder(value[k], rnd) for k in keys}
    if isinstance(value, list):
        return [reorder(v, rnd) for v in value]
    return value


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.dictionaries(st.text(), values, max_size=6), rnd=st.randoms())
def test_canonical_json_is_stable_under_key_reordering(value: dict[str, Any], rnd: Any) -> None:
    """Reordering keys (at any depth) changes neither the canonical text nor the digest."""
    shuffled = reorder(value, rnd)
    assert canonical_json(shuffled) == canonical_json(value)
    assert digest(shuffled) == digest(value)
    assert canonical_json(freeze(shuffled)) == canonical_json(value)
    assert json.loads(canonical_json(value)) == json.loads(canonical_json(to_plain(value)))


# --- the fast event digest agrees with the canonical one (properties: test_jcs.py) -----------


def test_event_hashes_are_canonical_digests(h: Harness) -> None:
    """Every event's hash is the canonical digest of its body."""
    h.to_completed([art("a", "ä")])
    for event in h.events:
        assert event.hash == digest(event.body()) == fast_digest(event.body())


def test_format_time_of_non_utc_zones_and_far_years() -> None:
    """Offsets convert to UTC; four-digit years are zero padded."""
    assert format_time(datetime(999, 1, 1, tzinfo=UTC)) == "0999-01-01T00:00:00.000000Z"
    tz = timezone(timedelta(hours=-3, minutes=-30))
    assert format_time(datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=tz)) == (
        "2026-01-01T03:30:00.000001Z"
    )


@given(st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, -0.0, 2.0**53]))
def test_a_json_number_has_the_digest_of_its_float(value: float) -> None:
    """``json_number`` turns a float RFC 8785 writes as a safe integer into that integer, and
    leaves any other (a fraction, an exponent, past 2**53 - 1) a float."""
    number = json_number(value)
    assert number == value and digest([number]) == digest([value])
    whole = canonical_json(value).lstrip("-").isdigit() and abs(value) < 2**53
    assert type(number) is (int if whole else float)
