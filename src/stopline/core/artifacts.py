"""Artifacts: what an approved proposal delivers, and the hashes that bind them.

``content_hash`` covers exactly what a readback can observe (title, summary, body and each
asset's name, media type and SHA-256), so a readback matches when the hash recomputed from the
remote copy equals the content hash of what was sent.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .canonical import digest, sha256_bytes
from .frozen import private_copy


@dataclass(frozen=True)
class Asset:
    name: str
    media_type: str
    data: bytes

    @property
    def sha256(self) -> str:
        return sha256_bytes(self.data)

    def fingerprint(self) -> dict[str, str]:
        return {"name": self.name, "media_type": self.media_type, "sha256": self.sha256}

    def to_plain(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "media_type": self.media_type,
            "data": base64.b64encode(self.data).decode("ascii"),
            "sha256": self.sha256,
        }

    @classmethod
    def from_plain(cls, doc: Mapping[str, Any]) -> Asset:
        return cls(doc["name"], doc["media_type"], base64.b64decode(doc["data"]))


@dataclass(frozen=True)
class Artifact:
    key: str
    title: str
    summary: str
    body: str
    assets: tuple[Asset, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        return content_hash(
            self.title, self.summary, self.body, [a.fingerprint() for a in self.assets]
        )

    def to_plain(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "summary": self.summary,
            "body": self.body,
            "assets": [a.to_plain() for a in self.assets],
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_plain(cls, doc: Mapping[str, Any]) -> Artifact:
        return cls(
            key=doc["key"],
            title=doc["title"],
            summary=doc["summary"],
            body=doc["body"],
            assets=tuple(Asset.from_plain(a) for a in doc.get("assets", ())),
            # a copy of its own: a target or a hook is handed this artifact
            metadata=dict(private_copy(doc.get("metadata", {}))),
        )


def content_hash(title: str, summary: str, body: str, assets: list[dict[str, str]]) -> str:
    """The hash a readback is compared with: recomputable from the remote copy alone."""
    ordered = sorted(assets, key=lambda a: a["name"])
    return digest({"title": title, "summary": summary, "body": body, "assets": ordered})


@dataclass(frozen=True)
class Readback:
    """What a target read back of one remote object."""

    remote_id: str
    version: str
    title: str
    summary: str
    body: str
    assets: tuple[dict[str, str], ...] = ()  # fingerprints: name, media_type, sha256

    @property
    def readback_hash(self) -> str:
        return content_hash(self.title, self.summary, self.body, [dict(a) for a in self.assets])

    def fields(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "summary": self.summary,
            "body": self.body,
            "assets": sorted((dict(a) for a in self.assets), key=lambda a: a["name"]),
        }


def intended_fields(artifact: Artifact) -> dict[str, Any]:
    return {
        "title": artifact.title,
        "summary": artifact.summary,
        "body": artifact.body,
        "assets": sorted((a.fingerprint() for a in artifact.assets), key=lambda a: a["name"]),
    }


def field_diff(artifact: Artifact, readback: Readback) -> list[str]:
    """Names of the fields where the readback differs from what was sent."""
    want, got = intended_fields(artifact), readback.fields()
    return [name for name in want if want[name] != got[name]]
