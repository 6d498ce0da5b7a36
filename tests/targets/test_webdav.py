"""WebDAVTarget specifics against a real WsgiDAV process: failures, locks, server quirks."""

from __future__ import annotations

import contextlib
import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stopline.core.artifacts import Artifact, Asset
from stopline.targets.base import OutcomeUnknown, RemoteMissing, TargetError
from stopline.targets.directory import key_slug
from stopline.targets.webdav import WebDAVTarget
from webdav_server import DavServer

LOCK_BODY = (
    b'<?xml version="1.0" encoding="utf-8"?><D:lockinfo xmlns:D="DAV:">'
    b"<D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype>"
    b"</D:lockinfo>"
)


def make(body: str = "Body\n", assets: tuple[Asset, ...] = ()) -> Artifact:
    return Artifact(key="k", title="T", summary="S", body=body, assets=assets)


@pytest.fixture
def folder(dav_server: DavServer) -> tuple[str, Path]:
    """A fresh collection on the shared server: its URL and its folder on disk."""
    sub = f"t-{uuid.uuid4().hex[:12]}"
    (dav_server.root / sub).mkdir()
    return dav_server.url + sub + "/", dav_server.root / sub


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(trust_env=False, timeout=5.0) as c:
        yield c


@pytest.fixture
def target(folder: tuple[str, Path]) -> Iterator[WebDAVTarget]:
    with WebDAVTarget(folder[0], trust_env=False) as t:
        yield t


def propfind_names(client: httpx.Client, url: str) -> list[str]:
    response = client.request("PROPFIND", url, headers={"Depth": "1"})
    assert response.status_code == 207
    hrefs = re.findall(r"<(?:\w+:)?href>([^<]*)</(?:\w+:)?href>", response.text)
    return sorted(h.rsplit("/", 1)[1] for h in hrefs if not h.endswith("/"))


def test_stored_document_has_the_documented_fields(
    target: WebDAVTarget, client: httpx.Client
) -> None:
    """The resource is <slug>.json holding title, summary, body, assets and the key."""
    ref = target.create(make(assets=(Asset("a.bin", "x/y", b"\x00\x01"),)), "doc key")
    assert ref.remote_id == key_slug("doc key") + ".json"
    doc = json.loads(client.get(target.base_url + ref.remote_id).content)
    assert doc == {
        "title": "T",
        "summary": "S",
        "body": "Body\n",
        "assets": [{"name": "a.bin", "media_type": "x/y", "data_base64": "AAE="}],
        "idempotency_key": "doc key",
    }


def test_repeated_create_leaves_one_resource_in_propfind(
    target: WebDAVTarget, client: httpx.Client
) -> None:
    """Two creates with one key leave exactly one resource in the collection listing."""
    ref = target.create(make(body="1"), "once")
    assert target.create(make(body="2"), "once") == ref
    assert propfind_names(client, target.base_url) == [ref.remote_id]


def test_stopped_server_fails_every_call(own_dav_server: DavServer) -> None:
    """Once the server process is gone every call raises TargetError, none succeeds."""
    with WebDAVTarget(own_dav_server.url, timeout=5.0, trust_env=False) as target:
        ref = target.create(make(), "key")
        own_dav_server.stop()
        with pytest.raises(TargetError):
            target.create(make(), "other key")
        with pytest.raises(TargetError):
            target.read(ref.remote_id)
        with pytest.raises(TargetError):
            target.find("key")
        with pytest.raises(TargetError):
            target.update(ref, make(body="new"))
        with pytest.raises(TargetError):
            target.publish(ref)


def test_unanswered_write_is_outcome_unknown_and_may_land(own_dav_server: DavServer) -> None:
    """A create the paused server never answers raises OutcomeUnknown; it lands on resume."""
    with WebDAVTarget(own_dav_server.url, timeout=0.5, trust_env=False) as target:
        own_dav_server.pause()
        with pytest.raises(OutcomeUnknown):
            target.create(make(), "slow key")
        own_dav_server.resume()
        deadline = time.monotonic() + 60  # a bound on a hang, not on speed
        found = None
        while found is None and time.monotonic() < deadline:
            with contextlib.suppress(TargetError):  # WsgiDAV writes in place: may be empty
                found = target.find("slow key")
            if found is None:
                time.sleep(0.05)
        assert found is not None  # the request the client gave up on did take effect
        assert target.read(found.remote_id).readback_hash == make().content_hash


def test_unanswered_read_is_target_error_not_outcome_unknown(own_dav_server: DavServer) -> None:
    """A read that times out is a plain TargetError: reading changes nothing."""
    with WebDAVTarget(own_dav_server.url, timeout=0.3, trust_env=False) as target:
        own_dav_server.pause()
        with pytest.raises(TargetError) as info:
            target.find("key")
        assert not isinstance(info.value, OutcomeUnknown)


def test_update_of_resource_locked_by_another_client_fails_unchanged(
    target: WebDAVTarget, client: httpx.Client
) -> None:
    """While another client holds a write lock the update fails and changes nothing."""
    ref = target.create(make(body="v1"), "locked")
    url = target.base_url + ref.remote_id
    lock = client.request("LOCK", url, headers={"Timeout": "Second-30"}, content=LOCK_BODY)
    assert lock.status_code == 200
    try:
        with pytest.raises(TargetError, match="locked by another writer"):
            target.update(ref, make(body="v2"))
    finally:
        client.request("UNLOCK", url, headers={"Lock-Token": lock.headers["Lock-Token"]})
    assert target.read(ref.remote_id).body == "v1"
    assert target.update(ref, make(body="v2")).version != ref.version


def test_update_releases_its_lock(target: WebDAVTarget, client: httpx.Client) -> None:
    """After an update (won or refused) another client can write the resource again."""
    ref = target.create(make(body="v1"), "unlock")
    target.update(ref, make(body="v2"))
    with pytest.raises(TargetError):
        target.update(ref, make(body="v3"))
    put = client.put(target.base_url + ref.remote_id, content=b"{}")
    assert put.status_code == 204


STORED = {"title": "T", "summary": "S", "body": "B", "idempotency_key": "corrupt"}


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{",
        b"[]",
        b'{"title": 1}',
        b"\xff\xfe",
        json.dumps({**STORED, "assets": [], "extra": 1}).encode(),  # a field of nobody's
        json.dumps(  # asset data that is not base64 (a lenient decoder would drop the "!")
            {**STORED, "assets": [{"name": "a", "media_type": "x/y", "data_base64": "AA!E="}]}
        ).encode(),
    ],
)
def test_corrupt_or_partial_document_is_an_error(
    target: WebDAVTarget, client: httpx.Client, content: bytes
) -> None:
    """A resource that is not a complete document reads and finds as TargetError."""
    ref = target.create(make(), "corrupt")
    assert client.put(target.base_url + ref.remote_id, content=content).status_code == 204
    with pytest.raises(TargetError) as info:
        target.read(ref.remote_id)
    assert not isinstance(info.value, RemoteMissing)
    with pytest.raises(TargetError):
        target.find("corrupt")


def test_http_error_status_is_target_error(dav_server: DavServer) -> None:
    """A collection that does not exist (409 on PUT) gives TargetError carrying the status."""
    with (
        WebDAVTarget(dav_server.url + "no-such-collection", trust_env=False) as target,
        pytest.raises(TargetError, match="HTTP 409"),
    ):
        target.create(make(), "key")


def test_publish_puts_a_marker_once(target: WebDAVTarget, folder: tuple[str, Path]) -> None:
    """publish creates <slug>.published beside the object and returns its URL."""
    ref = target.create(make(), "pub")
    url = target.publish(ref)
    assert url == target.base_url + ref.remote_id.removesuffix(".json") + ".published"
    assert json.loads((folder[1] / url.rsplit("/", 1)[1]).read_text())["version"] == ref.version
    assert target.publish(ref) == url


# -- WsgiDAV behaviour the target depends on (documented in stopline.targets.webdav) ----------


def test_wsgidav_if_match_on_missing_resource_creates_it(
    folder: tuple[str, Path], client: httpx.Client
) -> None:
    """WsgiDAV quirk: PUT with If-Match on a missing URL answers 201 instead of 412."""
    response = client.put(folder[0] + "x.json", content=b"{}", headers={"If-Match": '"abc"'})
    assert response.status_code == 201
    assert (folder[1] / "x.json").exists()


def test_wsgidav_honours_if_none_match_and_wrong_if_match(
    folder: tuple[str, Path], client: httpx.Client
) -> None:
    """WsgiDAV answers 412 to If-None-Match on an existing and a wrong If-Match on it."""
    url = folder[0] + "x.json"
    created = client.put(url, content=b"1", headers={"If-None-Match": "*"})
    assert created.status_code == 201
    assert client.put(url, content=b"2", headers={"If-None-Match": "*"}).status_code == 412
    assert client.put(url, content=b"2", headers={"If-Match": '"nope"'}).status_code == 412
    etag = client.head(url).headers["ETag"]
    assert client.put(url, content=b"3", headers={"If-Match": etag}).status_code == 204


def test_wsgidav_etag_ignores_same_size_rewrite_within_a_second(
    folder: tuple[str, Path], client: httpx.Client
) -> None:
    """WsgiDAV quirk: the ETag (inode-mtime-size) can stay the same for different content."""
    url = folder[0] + "x.json"
    deadline = time.monotonic() + 120  # a loaded machine may need many tries
    while time.monotonic() < deadline:
        time.sleep(1.0 - time.time() % 1.0)  # start at the beginning of a second
        start = int(time.time())
        client.put(url, content=b"aaaa")
        first = client.head(url).headers["ETag"]
        client.put(url, content=b"bbbb")
        second = client.head(url).headers["ETag"]
        if int(time.time()) == start:
            assert first == second
            return
    pytest.fail("could not do two writes within one second")


def test_wsgidav_lock_of_missing_url_creates_empty_resource(
    folder: tuple[str, Path], client: httpx.Client
) -> None:
    """WsgiDAV follows RFC 4918: LOCK of an unmapped URL creates an empty resource (201)."""
    response = client.request("LOCK", folder[0] + "y.json", content=LOCK_BODY)
    assert response.status_code == 201
    assert (folder[1] / "y.json").read_bytes() == b""
