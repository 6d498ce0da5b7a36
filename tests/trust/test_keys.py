"""Ed25519 keys as OpenSSH writes them (``stopline.trust.keys``), in process: what a public
key line must say, the comments of a trust root file, a private key never written over, and a
key that cannot verify anything."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from stopline.trust.keys import KeyError_, KeySigner, PublicKey, read_public_keys


def test_a_line_of_another_key_type_is_refused_for_its_type(tmp_path: Path) -> None:
    rsa = tmp_path / "rsa"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(rsa)], check=True
    )
    line = rsa.with_name("rsa.pub").read_text()
    with pytest.raises(KeyError_, match="not an ssh-ed25519 public key"):
        PublicKey.parse(line)


def test_a_trust_root_file_may_hold_comments_and_blank_lines() -> None:
    one, two = KeySigner.generate().public_key, KeySigner.generate().public_key
    text = f"# the team's roots\n\n{one.line} first\n  # retired: ssh-ed25519 AAAA\n{two.line}\n"
    assert read_public_keys(text) == [one, two]


def test_a_private_key_is_never_written_over(tmp_path: Path) -> None:
    """Saving a key where a file already is raises, and the file keeps what it held."""
    path = tmp_path / "id"
    first = KeySigner.generate()
    first.save(path)
    held = path.read_bytes()
    with pytest.raises(FileExistsError):
        KeySigner.generate().save(path)
    assert path.read_bytes() == held and KeySigner.load(path).public_key == first.public_key


def test_a_key_that_is_not_a_point_verifies_nothing() -> None:
    signer = KeySigner.generate()
    signature = signer.sign(b"x")
    assert not PublicKey(b"\x00" * 31).verify(signature, b"x")
    assert signer.public_key.verify(signature, b"x")
