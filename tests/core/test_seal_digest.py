"""The seal digest writes a seal document's canonical text directly; it must be the exact
serialiser's digest for every document, strange strings and integers out of range included,
and refuse what that refuses. ``evolve`` makes the record ``dataclasses.replace`` makes."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stopline.core.canonical import CanonicalError, digest
from stopline.core.frozen import freeze
from stopline.core.integrity import item_seal, seal_digest, seal_document
from stopline.core.records import evolve

from .helpers import Harness

KEYS = (
    "v",
    "id",
    "automation",
    "key",
    "state",
    "seq",
    "created_at",
    "updated_at",
    "attempts",
    "max_attempts",
    "next_eligible_at",
    "lease_token",
    "attempt_log",
    "data",
)
# any code point, lone surrogates and the characters RFC 8785 sorts apart included
strings = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()))
integers = st.integers(min_value=-(2**60), max_value=2**60) | st.integers(-5, 2**53 - 1)
values = strings | integers | st.none() | st.booleans() | st.floats(allow_nan=False)


def outcome(fn: Any, document: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "digest", fn(document)
    except (CanonicalError, ValueError) as exc:
        return "refused", type(exc).__name__


@settings(max_examples=400)
@given(st.fixed_dictionaries({k: strings | integers for k in KEYS}))
def test_a_seal_document_digests_as_the_exact_serialiser_does(document: dict[str, Any]) -> None:
    assert outcome(seal_digest, document) == outcome(digest, document)


@settings(max_examples=300)
@given(
    st.dictionaries(
        st.sampled_from((*KEYS, "extra", "\ue000")), values, min_size=len(KEYS) - 1, max_size=15
    )
)
def test_any_other_document_goes_the_general_way(document: dict[str, Any]) -> None:
    assert outcome(seal_digest, document) == outcome(digest, document)


def test_an_item_seal_is_the_digest_of_its_seal_document(h: Harness) -> None:
    item = h.discover()
    assert item_seal(item) == digest(seal_document(item))


@pytest.mark.parametrize("bad", [2**53, -(2**53), True, 1.5, None, "\ud800"])
def test_a_value_it_cannot_write_directly_still_digests_or_refuses_alike(bad: Any) -> None:
    document = {k: "x" for k in KEYS} | {"id": bad}
    assert outcome(seal_digest, document) == outcome(digest, document)


@settings(max_examples=200)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "seq": st.integers(0, 10**6),
            "head": st.text(max_size=64),
            "attempts": st.integers(0, 50),
            "lease_owner": st.none() | st.text(max_size=8),
            "data": st.dictionaries(st.text(max_size=4), st.integers()).map(freeze),
        },
    )
)
def test_evolve_makes_the_record_replace_makes(changes: dict[str, Any]) -> None:
    item = Harness().discover({"x": 1})
    before = dict(item.__dict__)
    made = evolve(item, **changes)
    assert made == replace(item, **changes)
    assert made.__dict__ == replace(item, **changes).__dict__
    assert item.__dict__ == before  # the old record is untouched
    with pytest.raises(AttributeError):
        made.seq = 1  # type: ignore[misc]  # frozen still


def test_evolve_refuses_a_name_that_is_not_a_field(h: Harness) -> None:
    item = h.discover()
    with pytest.raises(TypeError, match="no field 'stat'"):
        evolve(item, stat="completed")
