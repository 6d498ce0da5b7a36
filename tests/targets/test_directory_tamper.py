"""The directory target against whoever can write its folder: an object file that is sound but
for one thing, symlinks planted for the object's folder, its lock or an asset, a root moved
and replaced, a missing object file, a second publish. Each is refused (or keeps what was
written once), never read through."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from stopline.core.artifacts import Artifact, Asset
from stopline.targets.base import RemoteMissing, TargetError
from stopline.targets.directory import (
    ASSETS_DIR,
    LOCK_FILE,
    OBJECT_FILE,
    PUBLISHED_FILE,
    DirectoryTarget,
    asset_filename,
    is_slug,
    key_slug,
)

ASSET = Asset("chart.png", "image/png", b"\x89PNG pixels")


def make(body: str = "Body\n", assets: tuple[Asset, ...] = (ASSET,)) -> Artifact:
    return Artifact(key="k", title="T", summary="S", body=body, assets=assets)


@pytest.fixture
def target(tmp_path: Path) -> DirectoryTarget:
    return DirectoryTarget(tmp_path / "root")


def _header(target: DirectoryTarget, remote_id: str) -> tuple[dict[str, object], bytes]:
    """The object's header values and its body, as stored."""
    data = (target.root / remote_id / OBJECT_FILE).read_bytes()
    end = data.index(b"\n---\n", 3)
    values = {}
    for line in data[4:end].decode("ascii").split("\n"):
        name, _, encoded = line.partition(": ")
        values[name] = json.loads(encoded)
    return values, data[end + 5 :]


def _store(
    target: DirectoryTarget, remote_id: str, values: dict[str, object], body: bytes, start: bytes
) -> None:
    lines = [f"{name}: {json.dumps(value)}" for name, value in values.items()]
    text = start + ("\n".join(lines) + "\n---\n").encode("ascii") + body
    (target.root / remote_id / OBJECT_FILE).write_bytes(text)


@pytest.mark.parametrize(
    ("change", "start", "body"),
    [
        ({}, b"+++\n", None),  # no front matter: the first line is not ---
        ({"format": 2}, b"---\n", None),
        ({"extra": 1}, b"---\n", None),
        ({"key": 5}, b"---\n", None),
        ({"title": ["T"]}, b"---\n", None),
        ({"summary": None}, b"---\n", None),
        ({"assets": "none"}, b"---\n", None),
        (
            {"assets": [{"name": "a", "media_type": "t", "sha256": "0" * 64, "x": "y"}]},
            b"---\n",
            None,
        ),
        ({"assets": [{"name": "a", "media_type": "t", "sha256": "../../outside"}]}, b"---\n", None),
        ({"assets": [{"name": "a", "media_type": "t", "sha256": "A" * 64}]}, b"---\n", None),
        ({"assets": [{"name": "a", "media_type": 1, "sha256": "0" * 64}]}, b"---\n", None),
        ({}, b"---\n", b"caf\xe9 not UTF-8"),
    ],
)
def test_an_object_file_sound_but_for_one_thing_is_not_read(
    target: DirectoryTarget,
    change: dict[str, object],
    start: bytes,
    body: bytes | None,
) -> None:
    ref = target.create(make(), "key")
    values, stored_body = _header(target, ref.remote_id)
    _store(
        target, ref.remote_id, {**values, **change}, stored_body if body is None else body, start
    )
    with pytest.raises(TargetError) as info:
        target.read(ref.remote_id)
    assert not isinstance(info.value, RemoteMissing)
    with pytest.raises(TargetError):
        target.find("key")


def test_an_untouched_rewrite_of_the_object_file_still_reads(target: DirectoryTarget) -> None:
    """The helpers above write what the target writes: the same values read back."""
    ref = target.create(make(), "key")
    values, body = _header(target, ref.remote_id)
    _store(target, ref.remote_id, values, body, b"---\n")
    assert target.read(ref.remote_id).body == "Body\n"


def test_an_asset_listed_with_a_path_for_a_hash_never_reads_outside(
    target: DirectoryTarget, tmp_path: Path
) -> None:
    """A manifest whose hash is a path (``../../x``) would name a file outside the object's
    assets: it is a corrupt object, and the file there is not read."""
    ref = target.create(make(), "key")
    (tmp_path / "secret-a").write_bytes(b"not for the target")
    values, body = _header(target, ref.remote_id)
    evil = {"name": "a", "media_type": "t", "sha256": "../../../secret"}
    _store(target, ref.remote_id, {**values, "assets": [evil]}, body, b"---\n")
    with pytest.raises(TargetError, match="not readable"):
        target.read(ref.remote_id)


def test_an_object_folder_symlinked_to_another_object_is_refused(
    target: DirectoryTarget,
) -> None:
    """Inside the root, a symlink named as one object but leading to another would make one
    remote id read, update and publish the other's object."""
    first = target.create(make(body="first\n"), "first")
    second = target.create(make(body="second\n"), "second")
    folder = target.root / first.remote_id
    shutil.rmtree(folder)
    folder.symlink_to(target.root / second.remote_id, target_is_directory=True)
    for call in (
        lambda: target.read(first.remote_id),
        lambda: target.update(first, make(body="x")),
        lambda: target.publish(first),
    ):
        with pytest.raises(TargetError, match="leaves the root"):
            call()
    assert target.read(second.remote_id).body == "second\n"


def test_a_root_moved_away_and_replaced_by_a_symlink_is_left_alone(
    target: DirectoryTarget, tmp_path: Path
) -> None:
    ref = target.create(make(), "key")
    moved = tmp_path / "elsewhere"
    shutil.move(target.root, moved)
    target.root.symlink_to(moved, target_is_directory=True)
    for call in (
        lambda: target.read(ref.remote_id),
        lambda: target.update(ref, make(body="x")),
        lambda: target.find("key"),
    ):
        with pytest.raises(TargetError, match="leaves the root"):
            call()
    assert (moved / ref.remote_id / OBJECT_FILE).read_bytes().endswith(b"Body\n")


def test_a_lock_or_asset_file_replaced_by_a_symlink_is_not_followed(
    target: DirectoryTarget, tmp_path: Path
) -> None:
    ref = target.create(make(), "key")
    folder = target.root / ref.remote_id
    asset = folder / ASSETS_DIR / asset_filename(ASSET.sha256, ASSET.name)
    copy = tmp_path / "same-bytes"
    copy.write_bytes(ASSET.data)  # even the same bytes, read through a link, are refused
    asset.unlink()
    asset.symlink_to(copy)
    with pytest.raises(TargetError, match="not readable"):
        target.read(ref.remote_id)
    asset.unlink()
    asset.write_bytes(ASSET.data)
    assert target.read(ref.remote_id).body == "Body\n"
    lock = folder / LOCK_FILE
    outside_lock = tmp_path / "lock"
    outside_lock.touch()
    lock.unlink()
    lock.symlink_to(outside_lock)
    with pytest.raises(TargetError, match="cannot open lock") as info:
        target.read(ref.remote_id)
    assert not isinstance(info.value, RemoteMissing)


def test_an_object_whose_file_is_gone_is_missing_not_broken(target: DirectoryTarget) -> None:
    """Its folder and lock are there, its object file is not: read and update say
    ``RemoteMissing`` (the delivery stops; nothing is created again in its place)."""
    ref = target.create(make(), "key")
    (target.root / ref.remote_id / OBJECT_FILE).unlink()
    with pytest.raises(RemoteMissing):
        target.read(ref.remote_id)
    with pytest.raises(RemoteMissing):
        target.update(ref, make(body="x"))


def test_a_second_publish_keeps_the_marker_written_first(target: DirectoryTarget) -> None:
    ref = target.create(make(), "key")
    first = target.publish(ref)
    marker = target.root / ref.remote_id / PUBLISHED_FILE
    before = (os.stat(marker).st_ino, marker.read_bytes())
    assert target.publish(ref) == first
    assert (os.stat(marker).st_ino, marker.read_bytes()) == before


def test_a_long_asset_name_is_cut_to_a_file_name_the_disk_takes(target: DirectoryTarget) -> None:
    long = Asset("a" * 300 + ".png", "image/png", b"bytes")
    ref = target.create(make(assets=(long,)), "key")
    back = target.read(ref.remote_id)
    assert [a["name"] for a in back.assets] == [long.name]
    (stored,) = os.listdir(target.root / ref.remote_id / ASSETS_DIR)
    assert len(stored) <= 64 + 1 + 80


def test_a_slug_has_no_doubled_or_trailing_dash_where_the_key_is_cut() -> None:
    for key in ("a" * 39 + "-b", "a" * 39 + "!!b", "x" * 40 + "-", "--a--"):
        slug = key_slug(key)
        prefix = slug[: -(24 + 1)]
        assert is_slug(slug) and "--" not in slug, slug
        assert not prefix.endswith("-") and not prefix.startswith("-"), slug


def test_what_is_written_is_synced_before_it_counts(
    target: DirectoryTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each file's bytes are synced before it is renamed into place, and each folder after a
    rename in it: the root after a create, the object's folder after an update (a power cut
    then leaves the old object or the new, never a name without its bytes). The real
    ``fsync`` runs; the test only notes what it was called on."""
    synced: list[str] = []
    real = os.fsync

    def noting(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", noting)
    ref = target.create(make(), "key")
    root = str(target.root)
    assert synced[-1] == root
    files = [p for p in synced if os.path.basename(p).startswith(".tmp-")]
    assert len(files) == 2  # the asset, then object.md, each before its rename
    synced.clear()
    target.update(ref, make(body="new\n"))
    folder = str(target.root / ref.remote_id)
    assert [os.path.dirname(p) for p in synced if ".tmp-" in p] == [
        f"{folder}/{ASSETS_DIR}",
        folder,
    ]
    assert synced[-1] == folder
