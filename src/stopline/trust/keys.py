"""Ed25519 keys in the forms people already have: OpenSSH public key lines and private key
files, or a key held by ``ssh-agent``.

A public key is written as an OpenSSH line (``ssh-ed25519 AAAA... comment``) and named by its
fingerprint, ``SHA256:<base64>`` exactly as ``ssh-keygen -lf`` prints it.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

KEY_TYPE = "ssh-ed25519"


class KeyError_(ValueError):
    """A key that cannot be read, or is not Ed25519."""


@dataclass(frozen=True)
class PublicKey:
    """An Ed25519 public key."""

    raw: bytes  # 32 bytes

    @classmethod
    def parse(cls, text: str) -> PublicKey:
        """An OpenSSH line (``ssh-ed25519 AAAA... [comment]``)."""
        parts = text.strip().split()
        if len(parts) < 2 or parts[0] != KEY_TYPE:
            raise KeyError_(f"not an ssh-ed25519 public key: {text.strip()[:40]!r}")
        try:
            loaded = serialization.load_ssh_public_key(f"{parts[0]} {parts[1]}".encode())
        except (ValueError, TypeError) as exc:
            raise KeyError_(f"unreadable ssh-ed25519 public key: {exc}") from exc
        if not isinstance(loaded, Ed25519PublicKey):
            raise KeyError_("only Ed25519 keys are accepted")
        return cls(loaded.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))

    @property
    def blob(self) -> bytes:
        """The SSH wire form (string "ssh-ed25519", string key)."""
        kind = KEY_TYPE.encode()
        return len(kind).to_bytes(4, "big") + kind + len(self.raw).to_bytes(4, "big") + self.raw

    @property
    def line(self) -> str:
        return f"{KEY_TYPE} {base64.b64encode(self.blob).decode()}"

    @property
    def fingerprint(self) -> str:
        digest = hashlib.sha256(self.blob).digest()
        return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")

    def verify(self, signature: bytes, data: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, data)
        except (InvalidSignature, ValueError):
            return False
        return True


class Signer(Protocol):
    """Something that signs with one Ed25519 key."""

    @property
    def public_key(self) -> PublicKey: ...

    def sign(self, data: bytes) -> bytes: ...


@dataclass(frozen=True)
class KeySigner:
    """A private key in memory (read from an OpenSSH or PKCS#8 PEM file)."""

    private: Ed25519PrivateKey

    @property
    def public_key(self) -> PublicKey:
        raw = self.private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        return PublicKey(raw)

    def sign(self, data: bytes) -> bytes:
        return self.private.sign(data)

    @classmethod
    def generate(cls) -> KeySigner:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def load(cls, path: str | Path, passphrase: str | None = None) -> KeySigner:
        data = Path(path).read_bytes()
        secret = None if passphrase is None else passphrase.encode()
        key: object
        try:
            if b"OPENSSH PRIVATE KEY" in data:
                key = serialization.load_ssh_private_key(data, secret)
            else:
                key = serialization.load_pem_private_key(data, secret)
        except (ValueError, TypeError) as exc:
            raise KeyError_(f"{path}: unreadable private key ({exc})") from exc
        except UnsupportedAlgorithm as exc:  # an OpenSSH key's passphrase needs bcrypt
            raise KeyError_(
                f"{path}: a passphrase of this key format cannot be used here ({exc}); add "
                f"the key to ssh-agent (ssh-add {path}) and pass its public key"
            ) from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise KeyError_(f"{path}: only Ed25519 keys are accepted")
        return cls(key)

    def save(self, path: str | Path, comment: str = "") -> None:
        """Write the private key (OpenSSH format, mode 0600) and ``PATH.pub`` beside it."""
        target = Path(path)
        data = self.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        line = self.public_key.line + (f" {comment}" if comment else "")
        target.with_name(target.name + ".pub").write_text(line + "\n", "utf-8")


def read_public_keys(text: str) -> list[PublicKey]:
    """Every ``ssh-ed25519`` line of ``text`` (blank lines and ``#`` comments skipped)."""
    keys = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keys.append(PublicKey.parse(line))
    return keys
