"""A target that keeps each object as a folder of files under one root folder.

Layout of one object::

    <root>/<slug>/object.md                      header + body: the one file an update replaces
    <root>/<slug>/assets/<sha256>-<safe name>    asset bytes, named by content, never edited
    <root>/<slug>/.lock                          flock(2): writers exclusive, readers shared
    <root>/<slug>/published                      publication marker (written once)

``<slug>`` comes from the idempotency key alone (a readable ASCII prefix plus a SHA-256 of the
key, see :func:`key_slug`), never from the title, so no key or title can name a path. The
``remote_id`` of an object is its slug; every call checks it against the slug pattern and that
it resolves to a direct child of the root before touching the disk.

``object.md`` starts with a front-matter block whose values are JSON (ASCII-escaped, so a value
never spans lines and no value can close the block), then the body verbatim::

    ---
    format: 1
    key: "the idempotency key"
    title: "a title: with \\"quotes\\",\\nnewlines and ---"
    summary: "..."
    assets: [{"media_type": "image/png", "name": "../x.png", "sha256": "..."}]
    ---
    <body, UTF-8, byte for byte>

The ``assets`` line is the manifest: the original asset names and media types live there, the
asset files are named ``<sha256>-<sanitized name>`` and are found again from the manifest by
recomputing that file name (a stored name is never used as a path). Because the manifest names
every asset by hash, atomically replacing ``object.md`` (temp file in the same folder, fsync,
``os.replace``) switches the whole object at once; asset files are written before it and files
no longer referenced are removed after it. The ``version`` of an object is the SHA-256 of the
``object.md`` bytes, and a conditional update compares it under the exclusive lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.artifacts import Artifact, Asset, Readback
from ..core.canonical import sha256_bytes
from .base import OutcomeUnknown, RemoteMissing, RemoteRef, TargetError, VersionConflict

OBJECT_FILE = "object.md"
ASSETS_DIR = "assets"
LOCK_FILE = ".lock"
PUBLISHED_FILE = "published"
FORMAT = 1

_SLUG_PREFIX_MAX = 40
_SLUG_HASH_HEX = 24
SLUG_PATTERN = rf"[a-z0-9][a-z0-9-]{{0,{_SLUG_PREFIX_MAX - 1}}}-[0-9a-f]{{{_SLUG_HASH_HEX}}}"
_SLUG_RE = re.compile(SLUG_PATTERN)
_ASSET_NAME_MAX = 80
_UNSAFE_ASSET_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_HEADER_FIELDS = ("format", "key", "title", "summary", "assets")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def key_slug(idempotency_key: str) -> str:
    """A safe, stable name for the object created with ``idempotency_key``.

    ``<readable prefix>-<first 24 hex digits of sha256(key)>``: the prefix keeps only lowercase
    ASCII letters and digits of the key (other runs become ``-``, at most 40 characters), so the
    slug has no separator, dot, NUL or other special character and at most 65 characters. Two
    keys share a slug only if their SHA-256 prefixes collide (96 bits); the key is stored with
    the object and checked on lookup anyway.
    """
    if not isinstance(idempotency_key, str) or not idempotency_key:
        raise TargetError("the idempotency key must be a non-empty string")
    digest = hashlib.sha256(idempotency_key.encode("utf-8", "surrogatepass")).hexdigest()
    prefix = re.sub(r"[^a-z0-9]+", "-", idempotency_key.lower()).strip("-")
    prefix = prefix[:_SLUG_PREFIX_MAX].strip("-") or "obj"
    return f"{prefix}-{digest[:_SLUG_HASH_HEX]}"


def is_slug(value: object) -> bool:
    return isinstance(value, str) and _SLUG_RE.fullmatch(value) is not None


def asset_filename(sha256: str, name: str) -> str:
    """The file an asset is stored in: its content hash plus a sanitized copy of its name."""
    safe = _UNSAFE_ASSET_CHARS.sub("_", name)[:_ASSET_NAME_MAX] or "_"
    return f"{sha256}-{safe}"


@dataclass(frozen=True)
class _Stored:
    key: str
    title: str
    summary: str
    body: str
    assets: tuple[dict[str, str], ...]  # name, media_type, sha256 as recorded at write time


def _encode(key: str, artifact: Artifact) -> bytes:
    manifest = [a.fingerprint() for a in artifact.assets]
    values: dict[str, Any] = {
        "format": FORMAT,
        "key": key,
        "title": artifact.title,
        "summary": artifact.summary,
        "assets": manifest,
    }
    lines = ["---"]
    lines += [f"{name}: {json.dumps(values[name], ensure_ascii=True)}" for name in _HEADER_FIELDS]
    lines.append("---")
    header = ("\n".join(lines) + "\n").encode("ascii")
    try:
        body = artifact.body.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise TargetError(f"the body is not valid Unicode text: {exc}") from exc
    return header + body


def _corrupt(what: str) -> TargetError:
    return TargetError(f"stored object is not readable: {what}")


def _decode(data: bytes) -> _Stored:
    if not data.startswith(b"---\n"):
        raise _corrupt("no front matter")
    end = data.find(b"\n---\n", 3)
    if end < 0:
        raise _corrupt("front matter not closed")
    values: dict[str, Any] = {}
    for raw in data[4:end].split(b"\n") if end > 3 else []:
        try:
            name, _, encoded = raw.decode("ascii").partition(": ")
            values[name] = json.loads(encoded)
        except (UnicodeDecodeError, ValueError) as exc:
            raise _corrupt(f"bad header line {raw[:40]!r}") from exc
    if set(values) != set(_HEADER_FIELDS) or values["format"] != FORMAT:
        raise _corrupt(f"header fields {sorted(values)}")
    for name in ("key", "title", "summary"):
        if not isinstance(values[name], str):
            raise _corrupt(f"{name} is not a string")
    assets = values["assets"]
    if not isinstance(assets, list) or not all(
        isinstance(a, dict)
        and set(a) == {"name", "media_type", "sha256"}
        and all(isinstance(v, str) for v in a.values())
        and re.fullmatch(r"[0-9a-f]{64}", a["sha256"])
        for a in assets
    ):
        raise _corrupt("bad asset manifest")
    try:
        body = data[end + 5 :].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _corrupt("body is not UTF-8") from exc
    return _Stored(
        values["key"], values["title"], values["summary"], body, tuple(dict(a) for a in assets)
    )


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic_write(folder: Path, name: str, data: bytes) -> None:
    """Write ``folder/name`` so readers see the old bytes or the new bytes, never a mix."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, folder / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)


def _read_file(path: Path) -> bytes:
    """Read a regular file without following a symlink planted in its place."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


class DirectoryTarget:
    """Objects as folders of files under ``root`` (created if absent)."""

    def __init__(self, root: str | Path, name: str = "directory") -> None:
        self.name = name
        path = Path(root)
        path.mkdir(parents=True, exist_ok=True)
        self._root = path.resolve(strict=True)

    @property
    def root(self) -> Path:
        return self._root

    def describe(self) -> dict[str, str]:
        """Plain data from which :func:`stopline.targets.registry.from_description` rebuilds it."""
        return {"kind": "directory", "root": str(self._root), "name": self.name}

    # -- paths -------------------------------------------------------------------------------

    def _object_dir(self, remote_id: str) -> Path:
        """The folder of ``remote_id``, refusing anything that is not a slug inside the root."""
        if not is_slug(remote_id):
            raise TargetError(f"{self.name}: invalid remote id {remote_id!r}")
        folder = self._root / remote_id
        if folder.is_symlink() or folder.resolve().parent != self._root:
            raise TargetError(f"{self.name}: remote id {remote_id!r} leaves the root")
        return folder

    @contextlib.contextmanager
    def _locked(self, folder: Path, *, exclusive: bool) -> Iterator[None]:
        try:
            fd = os.open(folder / LOCK_FILE, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        except FileNotFoundError as exc:
            raise RemoteMissing(f"{self.name}: {folder.name} does not exist") from exc
        except OSError as exc:
            raise TargetError(f"{self.name}: cannot open lock of {folder.name}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def _current(self, folder: Path) -> bytes:
        try:
            return _read_file(folder / OBJECT_FILE)
        except FileNotFoundError as exc:
            raise RemoteMissing(f"{self.name}: {folder.name} does not exist") from exc
        except OSError as exc:
            raise TargetError(f"{self.name}: cannot read {folder.name}: {exc}") from exc

    @staticmethod
    def _write_assets(assets_dir: Path, assets: Sequence[Asset]) -> set[str]:
        names = set()
        for asset in assets:
            filename = asset_filename(asset.sha256, asset.name)
            _atomic_write(assets_dir, filename, asset.data)
            names.add(filename)
        return names

    # -- protocol ----------------------------------------------------------------------------

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        """Create the object for ``idempotency_key``; when it exists already, return it.

        The object is assembled in a hidden staging folder and renamed into place, so it
        appears complete or not at all; a concurrent create of the same key loses the rename
        and returns the winner's object.
        """
        slug = key_slug(idempotency_key)
        existing = self.find(idempotency_key)
        if existing is not None:
            return existing
        data = _encode(idempotency_key, artifact)
        try:
            staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=self._root))
        except OSError as exc:
            raise TargetError(f"{self.name}: cannot create in {self._root}: {exc}") from exc
        try:
            (staging / ASSETS_DIR).mkdir()
            (staging / LOCK_FILE).touch()
            self._write_assets(staging / ASSETS_DIR, artifact.assets)
            _atomic_write(staging, OBJECT_FILE, data)
            os.rename(staging, self._root / slug)
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                found = self.find(idempotency_key)
                if found is not None:
                    return found
            raise TargetError(f"{self.name}: create of {slug} failed: {exc}") from exc
        try:
            _fsync_dir(self._root)
        except OSError as exc:
            raise OutcomeUnknown(f"{self.name}: {slug} created but not synced: {exc}") from exc
        return RemoteRef(slug, sha256_bytes(data))

    def update(self, ref: RemoteRef, artifact: Artifact) -> RemoteRef:
        """Replace the object if it is still at ``ref.version``; never recreate it."""
        folder = self._object_dir(ref.remote_id)
        with self._locked(folder, exclusive=True):
            current = self._current(folder)
            if sha256_bytes(current) != ref.version:
                raise VersionConflict(
                    f"{self.name}: {ref.remote_id} is at another version than {ref.version}"
                )
            data = _encode(_decode(current).key, artifact)
            assets_dir = folder / ASSETS_DIR
            try:
                keep = self._write_assets(assets_dir, artifact.assets)
                _atomic_write(folder, OBJECT_FILE, data)
            except OSError as exc:
                if not folder.exists():
                    raise RemoteMissing(f"{self.name}: {ref.remote_id} vanished") from exc
                raise TargetError(f"{self.name}: update of {ref.remote_id}: {exc}") from exc
            with contextlib.suppress(OSError):  # unreferenced assets are garbage, not content
                for entry in os.listdir(assets_dir):
                    if entry not in keep:
                        os.unlink(assets_dir / entry)
        return RemoteRef(ref.remote_id, sha256_bytes(data))

    def read(self, remote_id: str) -> Readback:
        """Read the object back; asset hashes are recomputed from the stored asset bytes."""
        folder = self._object_dir(remote_id)
        with self._locked(folder, exclusive=False):
            data = self._current(folder)
            stored = _decode(data)
            assets = []
            for entry in stored.assets:
                path = folder / ASSETS_DIR / asset_filename(entry["sha256"], entry["name"])
                try:
                    blob = _read_file(path)
                except OSError as exc:
                    raise _corrupt(f"asset {entry['name']!r} of {remote_id}: {exc}") from exc
                assets.append(
                    {
                        "name": entry["name"],
                        "media_type": entry["media_type"],
                        "sha256": sha256_bytes(blob),
                    }
                )
        return Readback(
            remote_id=remote_id,
            version=sha256_bytes(data),
            title=stored.title,
            summary=stored.summary,
            body=stored.body,
            assets=tuple(assets),
        )

    def find(self, idempotency_key: str) -> RemoteRef | None:
        """The object of this key, ``None`` if its folder does not exist.

        A folder that exists but is incomplete, or holds another key, raises
        :class:`TargetError`: "none" is only answered when there is certainly none.
        """
        slug = key_slug(idempotency_key)
        folder = self._object_dir(slug)
        if not os.path.lexists(folder):
            return None
        try:
            with self._locked(folder, exclusive=False):
                data = self._current(folder)
        except RemoteMissing:
            if os.path.lexists(folder):
                raise _corrupt(f"{slug} is incomplete") from None
            return None
        if _decode(data).key != idempotency_key:
            raise TargetError(f"{self.name}: {slug} holds an object of another key")
        return RemoteRef(slug, sha256_bytes(data))

    def publish(self, ref: RemoteRef) -> str:
        """Mark the object published (once) if it is at ``ref.version``; returns a file URI."""
        folder = self._object_dir(ref.remote_id)
        marker = folder / PUBLISHED_FILE
        with self._locked(folder, exclusive=True):
            if sha256_bytes(self._current(folder)) != ref.version:
                raise VersionConflict(
                    f"{self.name}: {ref.remote_id} is at another version than {ref.version}"
                )
            if os.path.lexists(marker):
                return marker.as_uri()
            doc = {"remote_id": ref.remote_id, "version": ref.version}
            try:
                _atomic_write(folder, PUBLISHED_FILE, json.dumps(doc, sort_keys=True).encode())
            except OSError as exc:
                raise TargetError(f"{self.name}: publish of {ref.remote_id}: {exc}") from exc
        return marker.as_uri()
