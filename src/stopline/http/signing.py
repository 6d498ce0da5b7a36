"""A small signer: HMAC-SHA256 over a JSON payload, for session cookies and CSRF tokens."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Signer:
    """``sign(payload)`` -> ``body.mac``; ``unsign`` returns the payload or ``None``.

    Each purpose (``salt``) derives its own key from the secret, so a CSRF token can never be
    replayed as a cookie or the other way round.
    """

    def __init__(self, secret: str | bytes, salt: str) -> None:
        raw = secret.encode("utf-8") if isinstance(secret, str) else secret
        self._key = hmac.new(raw, b"stopline:" + salt.encode("utf-8"), hashlib.sha256).digest()

    def mac(self, message: str) -> str:
        return _b64(hmac.new(self._key, message.encode("utf-8"), hashlib.sha256).digest())

    def sign(self, payload: dict[str, Any], now: float | None = None) -> str:
        doc = {**payload, "iat": int(time.time() if now is None else now)}
        body = _b64(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8"))
        return f"{body}.{self.mac(body)}"

    def unsign(self, value: str, max_age: float, now: float | None = None) -> dict[str, Any] | None:
        if not value.isascii():  # a MAC is ASCII; compare_digest refuses other text (a 500)
            return None
        body, sep, mac = value.partition(".")
        if not sep or len(value) > 4096 or not hmac.compare_digest(self.mac(body), mac):
            return None
        try:
            doc = json.loads(_unb64(body))
        except (ValueError, binascii.Error):
            return None
        if not isinstance(doc, dict) or not isinstance(doc.get("iat"), int):
            return None
        age = (time.time() if now is None else now) - doc["iat"]
        return doc if 0 <= age <= max_age else None

    def check(self, message: str, mac: str) -> bool:
        """Whether ``mac`` (what a client sent: any text) is the MAC of ``message``."""
        return bool(mac) and mac.isascii() and hmac.compare_digest(self.mac(message), mac)
