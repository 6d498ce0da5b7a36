"""Targets described as plain data, so commands can reach them without the automation's code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import Target


class UnknownTarget(ValueError):
    """The description names no target stopline can build."""


def from_description(doc: Mapping[str, Any]) -> Target:
    kind = doc.get("kind")
    if kind == "directory":
        from .directory import DirectoryTarget

        return DirectoryTarget(str(doc["root"]), name=str(doc.get("name", "directory")))
    if kind == "webdav":
        from .webdav import WebDAVTarget

        return WebDAVTarget(str(doc["base_url"]), name=str(doc.get("name", "webdav")))
    raise UnknownTarget(f"no target of kind {kind!r}")
