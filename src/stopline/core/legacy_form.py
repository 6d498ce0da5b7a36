"""The form digests had before RFC 8785, and recognising a digest made in either form.

Databases written before stopline followed RFC 8785 hold digests and event hashes in the
*legacy* form (keys sorted by code point, floats as Python's ``repr``, integers of any size).
They are recognised by recomputation (:func:`digest_matches`); every new digest is RFC 8785.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from .canonical import to_plain
from .fast_digest import fast_digest
from .frozen import storage_default


def legacy_canonical_json(value: Any) -> str:
    """The canonical text of digests made before RFC 8785: keys sorted by code point, floats
    as Python's ``repr`` (``1.0``, ``1e-07``), integers of any size."""
    return json.dumps(
        to_plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def legacy_digest(value: Any) -> str:
    """``sha256`` of :func:`legacy_canonical_json`, lowercase hex."""
    return hashlib.sha256(legacy_canonical_json(value).encode("utf-8")).hexdigest()


_LEGACY_C_CANONICAL = json.JSONEncoder(
    default=storage_default,
    sort_keys=True,
    separators=(",", ":"),
    ensure_ascii=False,
    allow_nan=False,
)


def legacy_fast_digest(value: Any) -> str:
    """The event hash as it was made before RFC 8785 (json's C encoder, nothing checked)."""
    return hashlib.sha256(_LEGACY_C_CANONICAL.encode(value).encode("utf-8")).hexdigest()


def digest_matches(value: Any, expected: str) -> bool:
    """Whether ``expected`` is the digest of ``value`` in the RFC 8785 form or the legacy one.

    Databases written before RFC 8785 hold digests and event hashes made in the legacy form;
    recomputation accepts either, and every new digest is RFC 8785.

    Accepting both forms for the same value is safe. Each form is an injective serialisation:
    within one form, two different JSON values never share a text (string keys, sorted and
    unique; one spelling per string and per number). Across the two forms, a text that both
    could produce parses back to one JSON value, so it was made from that value whichever form
    made it. Hence, short of a SHA-256 collision, ``expected`` matches only if it was made over
    this very value; an edited proposal or a rewritten event matches in neither form.
    Accepting the second form adds a second spelling of the same value, never another value.
    (Numbers compare as JSON numbers: ``1`` and ``1.0`` are one value, which RFC 8785 writes
    as ``1`` and the legacy form wrote as given.)

    Never raises: a value without a form in one scheme (NaN, a key that is not a string, an
    integer beyond ±(2**53 - 1) in RFC 8785) simply does not match in that scheme.
    """
    return any(made == expected for made in _digests_in_each_form(value))


def digest_forms(value: Any) -> tuple[str, ...]:
    """The digest of ``value`` in each form :func:`digest_matches` accepts, RFC 8785 first; a
    form ``value`` has no text in is left out. For identifiers cut from a digest (a policy
    version is its first 16 hex digits): ``version in {d[:16] for d in digest_forms(v)}``."""
    return tuple(dict.fromkeys(_digests_in_each_form(value)))


def _digests_in_each_form(value: Any) -> Iterator[str]:
    for make in (fast_digest, legacy_digest):
        try:
            yield make(value)
        except (ValueError, TypeError, RecursionError):
            continue
