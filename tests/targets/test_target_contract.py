"""The behaviour every target must show, run against DirectoryTarget and a real WebDAV server."""

from __future__ import annotations

import threading

import pytest

from stopline.core.artifacts import Artifact, Asset, field_diff
from stopline.targets.base import (
    RemoteMissing,
    RemoteRef,
    Target,
    TargetError,
    VersionConflict,
)

from .conftest import Harness


def make(
    title: str = "A title",
    summary: str = "A summary",
    body: str = "Body text\n",
    assets: tuple[Asset, ...] = (),
    key: str = "item-1",
) -> Artifact:
    return Artifact(key=key, title=title, summary=summary, body=body, assets=assets)


HOSTILE_KEYS = [
    "../../etc/passwd",
    "/etc/passwd",
    "..",
    ".",
    "a/../../b",
    "C:\\Windows\\System32\\drivers",
    "ключ/ü/🚀 ünïcödé",
    "x" * 5000,
    "line\nbreak\rkey",
    " spaced key ",
    "CON",
    ".hidden",
    "%2e%2e%2f%2e%2e%2fetc",
    "a:b*c?d<e>f|g\"h'",
]

HOSTILE_TITLES = [
    "../../../etc/passwd",
    "/etc/passwd",
    'title: with colon\n---\nkey: "forged"\n---\n',
    "---",
    "Ünïcödé ✓ 日本語 🚀",
    'quote " and backslash \\ and tab \t',
    "",
]


def test_target_satisfies_protocol(harness: Harness) -> None:
    """The target is an instance of the Target protocol and has a name."""
    assert isinstance(harness.target, Target)
    assert harness.target.name == harness.kind


def test_create_then_read_back_matches_content_hash(harness: Harness) -> None:
    """A created object reads back with the artifact's content hash and the create's version."""
    artifact = make()
    ref = harness.target.create(artifact, "key-1")
    readback = harness.target.read(ref.remote_id)
    assert readback.readback_hash == artifact.content_hash
    assert field_diff(artifact, readback) == []
    assert readback.version == ref.version
    assert readback.remote_id == ref.remote_id


def test_create_twice_with_same_key_gives_one_object(harness: Harness) -> None:
    """A repeated create with the same key returns the first object and stores nothing new."""
    first = harness.target.create(make(body="first"), "same-key")
    second = harness.target.create(make(body="second"), "same-key")
    assert second == first
    assert harness.objects() == [first.remote_id]
    assert harness.target.read(first.remote_id).body == "first"


def test_create_with_different_keys_gives_distinct_objects(harness: Harness) -> None:
    """Different keys, even with the same title, give different objects."""
    one = harness.target.create(make(), "key-a")
    two = harness.target.create(make(), "key-b")
    assert one.remote_id != two.remote_id
    assert harness.objects() == sorted([one.remote_id, two.remote_id])


def test_find_returns_none_before_and_ref_after_create(harness: Harness) -> None:
    """find answers None for an unused key and the created object's ref afterwards."""
    assert harness.target.find("key-f") is None
    ref = harness.target.create(make(), "key-f")
    assert harness.target.find("key-f") == ref
    assert harness.target.find("key-g") is None


def test_update_with_current_version_replaces_content(harness: Harness) -> None:
    """An update at the current version changes the content, the readback and the version."""
    ref = harness.target.create(make(body="v1"), "key-u")
    new = make(title="New title", body="v2 is longer")
    ref2 = harness.target.update(ref, new)
    assert ref2.remote_id == ref.remote_id
    assert ref2.version != ref.version
    readback = harness.target.read(ref.remote_id)
    assert readback.readback_hash == new.content_hash
    assert readback.version == ref2.version
    assert harness.target.find("key-u") == ref2
    assert harness.objects() == [ref.remote_id]


def test_update_with_stale_version_conflicts_and_changes_nothing(harness: Harness) -> None:
    """An update at a stale version raises VersionConflict and leaves the newer content."""
    ref = harness.target.create(make(body="v1"), "key-s")
    ref2 = harness.target.update(ref, make(body="v2"))
    with pytest.raises(VersionConflict):
        harness.target.update(ref, make(body="v3"))
    readback = harness.target.read(ref.remote_id)
    assert readback.body == "v2"
    assert readback.version == ref2.version


def test_stale_update_of_equal_size_is_refused(harness: Harness) -> None:
    """A stale version is refused even when the newer content has exactly the same size."""
    ref = harness.target.create(make(body="aaaa"), "key-eq")
    harness.target.update(ref, make(body="bbbb"))
    with pytest.raises(VersionConflict):
        harness.target.update(ref, make(body="cccc"))
    assert harness.target.read(ref.remote_id).body == "bbbb"


def test_update_with_unknown_version_conflicts(harness: Harness) -> None:
    """An update with a version the object never had raises VersionConflict."""
    ref = harness.target.create(make(), "key-x")
    with pytest.raises(VersionConflict):
        harness.target.update(RemoteRef(ref.remote_id, "not-a-version"), make(body="new"))
    assert harness.target.read(ref.remote_id).version == ref.version


def test_update_of_deleted_object_is_remote_missing_and_not_recreated(harness: Harness) -> None:
    """An update of an object deleted behind the target's back raises RemoteMissing only."""
    ref = harness.target.create(make(), "key-d")
    harness.delete(ref.remote_id)
    with pytest.raises(RemoteMissing):
        harness.target.update(ref, make(body="resurrected?"))
    assert harness.objects() == []
    assert harness.target.find("key-d") is None
    with pytest.raises(RemoteMissing):
        harness.target.read(ref.remote_id)


def test_read_of_unknown_object_is_remote_missing(harness: Harness) -> None:
    """Reading a well-formed but never created remote id raises RemoteMissing."""
    ref = harness.target.create(make(), "key-r")
    harness.delete(ref.remote_id)
    with pytest.raises(RemoteMissing):
        harness.target.read(ref.remote_id)


def test_concurrent_updates_from_one_version_let_exactly_one_win(harness: Harness) -> None:
    """Of several updates racing from the same version one succeeds, the rest fail, none lost."""
    ref = harness.target.create(make(body="base"), "key-race")
    results: dict[int, RemoteRef | TargetError] = {}
    barrier = threading.Barrier(6)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = harness.target.update(ref, make(body=f"writer {i}"))
        except TargetError as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [(i, r) for i, r in results.items() if isinstance(r, RemoteRef)]
    assert len(winners) == 1, results
    index, winner = winners[0]
    readback = harness.target.read(ref.remote_id)
    assert readback.body == f"writer {index}"
    assert readback.version == winner.version


@pytest.mark.parametrize("key", HOSTILE_KEYS)
def test_hostile_keys_stay_inside_root_and_round_trip(harness: Harness, key: str) -> None:
    """Keys that look like paths never escape the root and still create, find and read back."""
    artifact = make(title=key, summary=key, body=key)
    ref = harness.target.create(artifact, key)
    assert "/" not in ref.remote_id and "\\" not in ref.remote_id
    assert not ref.remote_id.startswith(".") and len(ref.remote_id) < 100
    assert harness.target.find(key) == ref
    assert harness.target.read(ref.remote_id).readback_hash == artifact.content_hash
    assert harness.objects() == [ref.remote_id]
    assert harness.outside_files() == []


def test_hostile_titles_and_summaries_round_trip_exactly(harness: Harness) -> None:
    """Titles and summaries with newlines, colons, '---', quotes and unicode read back exactly."""
    for i, title in enumerate(HOSTILE_TITLES):
        summary = f"summary {i}:\n---\n{title}\n\nend"
        body = f"---\ntitle: fake\n---\n{title}\r\nno final newline"
        artifact = make(title=title, summary=summary, body=body)
        ref = harness.target.create(artifact, f"title-{i}")
        readback = harness.target.read(ref.remote_id)
        assert (readback.title, readback.summary, readback.body) == (title, summary, body)
        assert readback.readback_hash == artifact.content_hash
    assert len(harness.objects()) == len(HOSTILE_TITLES)
    assert harness.outside_files() == []


@pytest.mark.parametrize(
    "remote_id",
    [
        "../x",
        "/etc/passwd",
        "",
        ".",
        "..",
        "a/b",
        "x\x00y",
        "X" * 300,
        "../../etc/passwd",
        # a well-made name inside something more: only the name itself may address an object
        "../other-0123456789abcdef01234567.json",
        "a/other-0123456789abcdef01234567.json",
        "other-0123456789abcdef01234567.json/../../x",
        "other-0123456789abcdef01234567.json?x=1",
        "other-0123456789abcdef01234567.json#x",
        " other-0123456789abcdef01234567.json",
    ],
)
def test_invalid_remote_ids_are_refused_without_touching_anything(
    harness: Harness, remote_id: str
) -> None:
    """Remote ids that are not a target-made name raise TargetError on every call."""
    with pytest.raises(TargetError) as info:
        harness.target.read(remote_id)
    assert not isinstance(info.value, RemoteMissing)
    with pytest.raises(TargetError):
        harness.target.update(RemoteRef(remote_id, "v"), make())
    with pytest.raises(TargetError):
        harness.target.publish(RemoteRef(remote_id, "v"))
    assert harness.outside_files() == []


def test_assets_round_trip_name_media_type_and_hash(harness: Harness) -> None:
    """Assets come back with their original names, media types and SHA-256."""
    assets = (
        Asset("chart.png", "image/png", bytes(range(256)) * 4),
        Asset("../../evil name?.txt", "text/plain; charset=utf-8", b"hello\n"),
        Asset("Übersicht €.csv", "text/csv", b"a,b\n1,2\n"),
        Asset("empty", "application/octet-stream", b""),
        Asset("same-bytes-other-name", "image/png", bytes(range(256)) * 4),
    )
    artifact = make(assets=assets)
    ref = harness.target.create(artifact, "key-assets")
    readback = harness.target.read(ref.remote_id)
    assert sorted(readback.assets, key=lambda a: a["name"]) == sorted(
        (a.fingerprint() for a in assets), key=lambda a: a["name"]
    )
    assert readback.readback_hash == artifact.content_hash
    assert harness.outside_files() == []


def test_update_replaces_assets(harness: Harness) -> None:
    """An update removes, adds and changes assets as the new artifact says."""
    ref = harness.target.create(
        make(assets=(Asset("a.txt", "text/plain", b"A"), Asset("b.txt", "text/plain", b"B"))),
        "key-assets-u",
    )
    new = make(assets=(Asset("b.txt", "text/plain", b"B2"), Asset("c.bin", "x/y", b"C")))
    harness.target.update(ref, new)
    readback = harness.target.read(ref.remote_id)
    assert readback.readback_hash == new.content_hash
    assert field_diff(new, readback) == []


def test_publish_returns_signal_once_and_checks_version(harness: Harness) -> None:
    """publish returns a stable signal, refuses a stale version and a missing object."""
    ref = harness.target.create(make(), "key-p")
    signal = harness.target.publish(ref)
    assert signal and harness.target.publish(ref) == signal
    ref2 = harness.target.update(ref, make(body="changed"))
    with pytest.raises(VersionConflict):
        harness.target.publish(ref)
    assert harness.target.publish(ref2) == signal
    harness.delete(ref.remote_id)
    with pytest.raises(RemoteMissing):
        harness.target.publish(ref2)


def test_empty_key_is_refused(harness: Harness) -> None:
    """An empty idempotency key is refused instead of naming a shared object."""
    with pytest.raises(TargetError):
        harness.target.create(make(), "")
    with pytest.raises(TargetError):
        harness.target.find("")
