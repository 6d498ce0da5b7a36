"""Holding a store against a checkpoint file (``stopline.trust.checkpoints``) on a host in
unsigned mode: a file that claims a signature must carry a sound one, and a file that is not
a checkpoint document is refused before anything reads it."""

from __future__ import annotations

import json

import pytest

from helpers import T0, discover
from stopline.store import Store
from stopline.trust import checkpoints
from stopline.trust.keys import KeySigner

SIGNER = KeySigner.generate()


def reasons(held: checkpoints.Held) -> list[str]:
    return [f.reason for f in held.findings]


def test_a_sound_signed_checkpoint_holds_in_unsigned_mode_with_a_warning(store: Store) -> None:
    discover(store, "k1")
    held = checkpoints.hold(store, checkpoints.take(store, T0, SIGNER), trust=None)
    assert reasons(held) == [] and held.signed_by == SIGNER.public_key.fingerprint
    assert any("not checked against a trust root" in w for w in held.warnings)


def test_a_signature_that_does_not_verify_is_a_finding_in_unsigned_mode_too(
    store: Store,
) -> None:
    """Without a trust root the key is not checked against anything, but the signature is
    still checked over the body: a body changed after signing is ``signature_invalid``."""
    discover(store, "k1")
    doc = checkpoints.take(store, T0, SIGNER)
    doc["body"]["at"] = "2020-01-01T00:00:00Z"
    held = checkpoints.hold(store, doc, trust=None)
    assert reasons(held) == ["signature_invalid"]
    assert "does not verify" in held.findings[0].detail


def test_a_key_without_a_signature_is_a_malformed_signature_not_an_unsigned_file(
    store: Store,
) -> None:
    """A file that names a key and lost its signature does not pass as an unsigned
    checkpoint (a warning): it is a finding."""
    discover(store, "k1")
    doc = checkpoints.take(store, T0, SIGNER)
    del doc["signature"]
    held = checkpoints.hold(store, doc, trust=None)
    assert reasons(held) == ["signature_invalid"]


@pytest.mark.parametrize(
    "text", ['{"body": [1, 2]}', '{"body": "heads"}', "[]", '{"key": "x"}', "not json"]
)
def test_a_file_that_is_not_a_checkpoint_document_is_refused(text: str) -> None:
    with pytest.raises(checkpoints.CheckpointError):
        checkpoints.parse(text)


def test_a_checkpoint_document_reads_back_as_taken(store: Store) -> None:
    discover(store, "k1")
    doc = checkpoints.take(store, T0, SIGNER)
    assert checkpoints.parse(json.dumps(doc)) == doc
