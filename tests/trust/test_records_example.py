"""The worked example of docs/records.md verifies with the cryptography and rfc8785 packages
alone: nothing from stopline is imported for the check."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_ssh_public_key

RECORDS = Path(__file__).resolve().parents[2] / "docs" / "records.md"


def example() -> tuple[dict[str, object], bytes, str]:
    """The signed document, the canonical text and the fingerprint the example shows."""
    section = RECORDS.read_text("utf-8").split("### A worked example", 1)[1]
    document = re.search(r"```json\n(.*?)\n```", section, re.S)
    canonical = re.search(r"```text\n(.*?)\n```", section, re.S)
    fingerprint = re.search(r"fingerprint is `(SHA256:[A-Za-z0-9+/]+)`", section)
    assert document and canonical and fingerprint
    return json.loads(document.group(1)), canonical.group(1).encode(), fingerprint.group(1)


def test_the_worked_example_verifies_independently() -> None:
    """The canonical text is rfc8785's, the signature verifies over it with the named key, and
    the fingerprint is the SHA-256 of the key's wire form."""
    doc, canonical, fingerprint = example()
    assert rfc8785.dumps(doc["body"]) == canonical
    key = load_ssh_public_key(str(doc["key"]).encode())
    assert isinstance(key, Ed25519PublicKey)
    key.verify(base64.b64decode(str(doc["signature"])), canonical)
    blob = base64.b64decode(str(doc["key"]).split()[1])
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    assert fingerprint == f"SHA256:{digest}"


def test_an_edited_example_does_not_verify() -> None:
    """The same check refuses the body with one field changed."""
    doc, _, _ = example()
    body = dict(doc["body"])  # type: ignore[call-overload]
    body["item"] = "itm_another"
    key = load_ssh_public_key(str(doc["key"]).encode())
    assert isinstance(key, Ed25519PublicKey)
    try:
        key.verify(base64.b64decode(str(doc["signature"])), rfc8785.dumps(body))
    except InvalidSignature:
        return
    raise AssertionError("an edited body verified")
