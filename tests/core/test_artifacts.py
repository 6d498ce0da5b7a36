"""core/artifacts.py: the content hash binds exactly what a readback can observe, a readback of
the same content matches it, and the field diff names exactly the fields that differ."""

from __future__ import annotations

import hashlib
from dataclasses import FrozenInstanceError

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stopline.core.artifacts import (
    Artifact,
    Asset,
    Readback,
    content_hash,
    field_diff,
    intended_fields,
)
from stopline.core.canonical import digest

TEXT = st.text(max_size=12)
ASSETS = st.lists(
    st.builds(
        Asset,
        st.text("abcxyz.", min_size=1, max_size=6),
        st.sampled_from(["text/plain", "image/png"]),
        st.binary(max_size=16),
    ),
    max_size=3,
    unique_by=lambda a: a.name,
)
ARTIFACTS = st.builds(
    Artifact, st.text("abk", min_size=1, max_size=4), TEXT, TEXT, TEXT, ASSETS.map(tuple)
)


def read_back(artifact: Artifact, **changes: object) -> Readback:
    """What a target that stored ``artifact`` faithfully reads back (with ``changes``)."""
    fields = {
        "title": artifact.title,
        "summary": artifact.summary,
        "body": artifact.body,
        "assets": tuple(a.fingerprint() for a in artifact.assets),
        **changes,
    }
    return Readback("r1", "v1", **fields)  # type: ignore[arg-type]


def test_the_hash_is_the_digest_of_the_observable_fields_with_assets_by_name() -> None:
    logo = Asset("logo.png", "image/png", b"\x89PNG")
    notes = Asset("a-notes.txt", "text/plain", b"hello")
    art = Artifact("k", "Title", "Sum", "Body", (logo, notes), {"not": "hashed"})
    assert logo.sha256 == hashlib.sha256(b"\x89PNG").hexdigest()
    assert logo.fingerprint() == {
        "name": "logo.png",
        "media_type": "image/png",
        "sha256": logo.sha256,
    }
    assert art.content_hash == digest(
        {
            "title": "Title",
            "summary": "Sum",
            "body": "Body",
            "assets": [notes.fingerprint(), logo.fingerprint()],
        }
    )
    # the key and the metadata are not observable remotely: they do not change the hash
    assert Artifact("other", "Title", "Sum", "Body", (notes, logo)).content_hash == art.content_hash


@given(ARTIFACTS)
def test_a_faithful_readback_matches_and_differs_in_nothing(art: Artifact) -> None:
    back = read_back(art, assets=tuple(reversed([a.fingerprint() for a in art.assets])))
    assert back.readback_hash == art.content_hash
    assert field_diff(art, back) == []
    assert back.fields() == intended_fields(art)


@given(ARTIFACTS, st.sampled_from(["title", "summary", "body", "assets"]), st.data())
def test_each_changed_field_changes_the_hash_and_is_named_alone(
    art: Artifact, name: str, data: st.DataObject
) -> None:
    if name == "assets":
        extra = {"name": "zz-extra", "media_type": "text/plain", "sha256": "0" * 64}
        changed: object = (*(a.fingerprint() for a in art.assets), extra)
    else:
        changed = getattr(art, name) + data.draw(st.text(min_size=1, max_size=3))
    back = read_back(art, **{name: changed})
    assert back.readback_hash != art.content_hash
    assert field_diff(art, back) == [name]


def test_an_asset_s_bytes_name_or_type_each_change_the_hash() -> None:
    base = Artifact("k", "t", "s", "b", (Asset("a", "text/plain", b"1"),))
    for other in (
        Asset("a", "text/plain", b"2"),
        Asset("b", "text/plain", b"1"),
        Asset("a", "text/html", b"1"),
    ):
        assert Artifact("k", "t", "s", "b", (other,)).content_hash != base.content_hash
    assert content_hash("t", "s", "b", []) != base.content_hash


@given(ARTIFACTS, st.dictionaries(st.text("mn", min_size=1, max_size=2), st.integers(), max_size=2))
def test_an_artifact_survives_its_plain_form(art: Artifact, metadata: dict[str, int]) -> None:
    """to_plain / from_plain keep every field, the assets' bytes (as base64) and metadata."""
    art = Artifact(art.key, art.title, art.summary, art.body, art.assets, metadata)
    plain = art.to_plain()
    assert [a["sha256"] for a in plain["assets"]] == [a.sha256 for a in art.assets]
    again = Artifact.from_plain(plain)
    assert again == art and again.content_hash == art.content_hash
    bare = {k: v for k, v in plain.items() if k not in ("assets", "metadata")}
    assert Artifact.from_plain(bare) == Artifact(art.key, art.title, art.summary, art.body)


def test_what_was_sent_and_read_back_cannot_be_changed_after_the_fact() -> None:
    """Artifacts, their assets and readbacks are frozen: a hash bound to one stays bound."""
    asset = Asset("a", "text/plain", b"1")
    for record, name in (
        (asset, "data"),
        (Artifact("k", "t", "s", "b", (asset,)), "body"),
        (Readback("r1", "v1", "t", "s", "b"), "body"),
    ):
        with pytest.raises(FrozenInstanceError):
            setattr(record, name, "changed")
