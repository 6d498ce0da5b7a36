"""DirectoryTarget specifics: on-disk format, atomicity leftovers, symlinks, corruption."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stopline.core.artifacts import Artifact, Asset
from stopline.targets.base import RemoteMissing, RemoteRef, TargetError
from stopline.targets.directory import (
    ASSETS_DIR,
    OBJECT_FILE,
    DirectoryTarget,
    asset_filename,
    is_slug,
    key_slug,
)


def make(body: str = "Body\n", assets: tuple[Asset, ...] = (), title: str = "T") -> Artifact:
    return Artifact(key="k", title=title, summary="S", body=body, assets=assets)


@pytest.fixture
def target(tmp_path: Path) -> DirectoryTarget:
    return DirectoryTarget(tmp_path / "root")


def hidden_entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*") if p.name != ".lock")


def test_root_is_created_and_named(tmp_path: Path) -> None:
    """The root folder is created when absent and the target keeps its name."""
    target = DirectoryTarget(tmp_path / "a" / "b", name="drafts")
    assert (tmp_path / "a" / "b").is_dir()
    assert target.name == "drafts"


def test_object_file_has_json_front_matter_then_body(target: DirectoryTarget) -> None:
    """object.md is a front-matter block of JSON values followed by the body verbatim."""
    ref = target.create(make(body="line 1\n---\nline 2", title='a: "b"\n---'), "my key")
    data = (target.root / ref.remote_id / OBJECT_FILE).read_bytes()
    assert data.startswith(b'---\nformat: 1\nkey: "my key"\ntitle: "a: \\"b\\"\\n---"\n')
    assert data.endswith(b"\n---\nline 1\n---\nline 2")
    assert ref.version == hashlib.sha256(data).hexdigest()


def test_slug_comes_from_key_not_title(target: DirectoryTarget) -> None:
    """The object's folder is named from the key; the title never appears in it."""
    ref = target.create(make(title="../../title-path"), "Weekly Report 2026/11")
    assert ref.remote_id == key_slug("Weekly Report 2026/11")
    assert ref.remote_id.startswith("weekly-report-2026-11-")
    assert "title" not in ref.remote_id


def test_assets_stored_by_hash_with_sanitized_names(target: DirectoryTarget) -> None:
    """Asset files are named '<sha256>-<sanitized name>' inside the object's assets folder."""
    asset = Asset("../../x/ev il\x00.png", "image/png", b"png")
    ref = target.create(make(assets=(asset,)), "key")
    files = os.listdir(target.root / ref.remote_id / ASSETS_DIR)
    assert files == [asset_filename(asset.sha256, asset.name)]
    assert files[0] == f"{asset.sha256}-.._.._x_ev_il_.png"


def test_no_temp_or_staging_files_are_left_behind(target: DirectoryTarget) -> None:
    """After create, update and publish no temp or staging files remain."""
    ref = target.create(make(assets=(Asset("a", "x/y", b"1"),)), "key")
    ref = target.update(ref, make(body="2", assets=(Asset("b", "x/y", b"2"),)))
    target.publish(ref)
    assert hidden_entries(target.root) == []


def test_update_removes_unreferenced_asset_files(target: DirectoryTarget) -> None:
    """Asset files the new version no longer names are deleted after the update."""
    old, new = Asset("old", "x/y", b"old"), Asset("new", "x/y", b"new")
    ref = target.create(make(assets=(old,)), "key")
    target.update(ref, make(assets=(new,)))
    files = os.listdir(target.root / ref.remote_id / ASSETS_DIR)
    assert files == [asset_filename(new.sha256, new.name)]


def test_tampered_asset_changes_the_readback_hash(target: DirectoryTarget) -> None:
    """Asset hashes in the readback are recomputed from the stored bytes, not the manifest."""
    asset = Asset("a.txt", "text/plain", b"original")
    artifact = make(assets=(asset,))
    ref = target.create(artifact, "key")
    path = target.root / ref.remote_id / ASSETS_DIR / asset_filename(asset.sha256, asset.name)
    path.write_bytes(b"tampered")
    assert target.read(ref.remote_id).readback_hash != artifact.content_hash


def test_missing_asset_file_is_an_error_not_a_readback(target: DirectoryTarget) -> None:
    """A manifest entry without its asset file makes read raise TargetError."""
    asset = Asset("a.txt", "text/plain", b"x")
    ref = target.create(make(assets=(asset,)), "key")
    (target.root / ref.remote_id / ASSETS_DIR / asset_filename(asset.sha256, asset.name)).unlink()
    with pytest.raises(TargetError):
        target.read(ref.remote_id)


@pytest.mark.parametrize(
    "content",
    [b"", b"no front matter", b"---\nformat: 1\n", b'---\nformat: 2\nkey: "k"\n---\n', b"\xff"],
)
def test_corrupt_object_file_reads_as_target_error(target: DirectoryTarget, content: bytes) -> None:
    """An unparseable object.md raises TargetError (not RemoteMissing, not a readback)."""
    ref = target.create(make(), "key")
    (target.root / ref.remote_id / OBJECT_FILE).write_bytes(content)
    with pytest.raises(TargetError) as info:
        target.read(ref.remote_id)
    assert not isinstance(info.value, RemoteMissing)


def test_object_folder_symlinked_outside_root_is_refused(
    target: DirectoryTarget, tmp_path: Path
) -> None:
    """A slug folder replaced by a symlink to elsewhere is refused on every call."""
    ref = target.create(make(), "key")
    outside = tmp_path / "outside"
    shutil.move(target.root / ref.remote_id, outside)
    (target.root / ref.remote_id).symlink_to(outside, target_is_directory=True)
    with pytest.raises(TargetError):
        target.read(ref.remote_id)
    with pytest.raises(TargetError):
        target.update(ref, make(body="x"))
    with pytest.raises(TargetError):
        target.find("key")
    assert (outside / OBJECT_FILE).read_bytes().endswith(b"Body\n")


def test_object_file_symlink_is_not_followed(target: DirectoryTarget, tmp_path: Path) -> None:
    """An object.md replaced by a symlink is not read through."""
    ref = target.create(make(), "key")
    secret = tmp_path / "secret"
    secret.write_text("---\n")
    object_file = target.root / ref.remote_id / OBJECT_FILE
    object_file.unlink()
    object_file.symlink_to(secret)
    with pytest.raises(TargetError):
        target.read(ref.remote_id)


def test_folder_of_another_key_is_not_taken_for_this_key(target: DirectoryTarget) -> None:
    """If a slug folder holds an object of another key, find and create refuse it."""
    ref = target.create(make(), "key-a")
    shutil.copytree(target.root / ref.remote_id, target.root / key_slug("key-b"))
    with pytest.raises(TargetError):
        target.find("key-b")
    with pytest.raises(TargetError):
        target.create(make(), "key-b")


class _LateLooker(DirectoryTarget):
    """A target whose first look for a key misses: another creator's rename lands between
    this create's look and its own rename."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.looks = 0

    def find(self, idempotency_key: str) -> RemoteRef | None:
        self.looks += 1
        return None if self.looks == 1 else super().find(idempotency_key)


def test_a_create_that_loses_the_rename_returns_the_winners_object(tmp_path: Path) -> None:
    """Two creates of one key race: the loser's rename meets the winner's folder, and it
    returns the winner's object (found by its key) instead of failing or writing a second."""
    winner = DirectoryTarget(tmp_path / "t").create(make(body="first"), "key")
    late = _LateLooker(tmp_path / "t")
    assert late.create(make(body="second"), "key") == winner
    assert late.looks == 2
    assert late.read(winner.remote_id).body == "first"
    assert [p.name for p in late.root.iterdir()] == [winner.remote_id]


def test_incomplete_folder_is_not_reported_absent(target: DirectoryTarget) -> None:
    """A slug folder without its files is an error for find, never 'none'."""
    (target.root / key_slug("key")).mkdir()
    with pytest.raises(TargetError) as info:
        target.find("key")
    assert not isinstance(info.value, RemoteMissing)


def test_publish_writes_marker_with_version(target: DirectoryTarget) -> None:
    """publish writes a 'published' marker naming the version and returns its file URI."""
    ref = target.create(make(), "key")
    signal = target.publish(ref)
    marker = target.root / ref.remote_id / "published"
    assert signal == marker.as_uri()
    assert ref.version in marker.read_text()


def test_body_that_is_not_unicode_is_refused(target: DirectoryTarget) -> None:
    """A body with a lone surrogate is refused before anything is written."""
    with pytest.raises(TargetError):
        target.create(make(body="bad \ud800"), "key")
    assert os.listdir(target.root) == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(min_size=1, max_size=300))
def test_key_slug_is_always_a_safe_single_name(key: str) -> None:
    """Every non-empty key maps to a stable slug of safe characters, at most 65 long."""
    slug = key_slug(key)
    assert is_slug(slug) and slug == key_slug(key)
    assert len(slug) <= 65 and slug not in (".", "..")
    assert set(slug) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")
