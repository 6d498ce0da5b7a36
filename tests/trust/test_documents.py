"""Signed documents as stored (``stopline.trust.documents``): a document of the wrong shape is
refused when read, and a signature is either exactly the key's over the body or no signature:
never an exception, never text with characters added that still verifies."""

from __future__ import annotations

from typing import Any

import pytest

from stopline.trust.documents import MalformedDocument, Signed, sign
from stopline.trust.keys import KeySigner

SIGNER = KeySigner.generate()
GOOD = sign({"kind": "stopline.attestation", "n": 1}, SIGNER).to_plain()


@pytest.mark.parametrize(
    "doc",
    [
        [GOOD],
        {**GOOD, "body": ["kind"]},
        {**GOOD, "key": None},
        {**GOOD, "signature": 5},
        {"body": GOOD["body"], "key": GOOD["key"]},
    ],
    ids=["not-an-object", "body-not-an-object", "key-not-text", "signature-not-text", "none"],
)
def test_a_document_of_the_wrong_shape_is_refused_when_read(doc: Any) -> None:
    with pytest.raises(MalformedDocument):
        Signed.from_plain(doc)


def test_a_signature_is_exactly_the_keys_over_the_body() -> None:
    assert Signed.from_plain(GOOD).valid()
    signature = GOOD["signature"]
    padded = {**GOOD, "signature": signature[:10] + "!" + signature[10:]}
    assert not Signed.from_plain(padded).valid()  # a decoder that skips "!" would accept it


@pytest.mark.parametrize("signature", ["abc", "====", "", "A" * 88])
def test_a_signature_that_is_not_one_is_false_not_an_error(signature: str) -> None:
    assert Signed.from_plain({**GOOD, "signature": signature}).valid() is False


def test_a_key_line_that_is_not_a_key_verifies_nothing() -> None:
    assert Signed.from_plain({**GOOD, "key": "ssh-ed25519 not-base64"}).valid() is False
