"""WebDAVTarget against servers and races WsgiDAV alone never shows: a real HTTP server in front
of a real WsgiDAV process (``webdav_proxy.py``) that answers some requests otherwise, or deletes
the resource on the server's disk between two requests of one update. In each case the target
fails closed: it never reports a write it cannot vouch for, and never leaves a resource behind
that an update created by accident."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from stopline.core.artifacts import Artifact
from stopline.targets.base import (
    OutcomeUnknown,
    RemoteMissing,
    RemoteRef,
    TargetError,
    VersionConflict,
)
from stopline.targets.directory import key_slug
from stopline.targets.webdav import WebDAVTarget
from webdav_proxy import Answer, Interposer, Request, Rule, interposed
from webdav_server import DavServer


def make(body: str = "Body\n") -> Artifact:
    return Artifact(key="k", title="T", summary="S", body=body)


@pytest.fixture
def folder(dav_server: DavServer) -> tuple[str, Path]:
    """A fresh collection on the shared server: its name and its folder on disk."""
    sub = f"t-{uuid.uuid4().hex[:12]}"
    (dav_server.root / sub).mkdir()
    return sub, dav_server.root / sub


@pytest.fixture
def proxy(dav_server: DavServer) -> Iterator[Interposer]:
    with interposed(dav_server.url) as p:
        yield p


@pytest.fixture
def target(proxy: Interposer, folder: tuple[str, Path]) -> Iterator[WebDAVTarget]:
    with WebDAVTarget(proxy.url + folder[0], trust_env=False) as t:
        yield t


def methods(proxy: Interposer) -> list[str]:
    return [r.method for r in proxy.seen]


def on(method: str, then: Rule) -> Rule:
    """A rule for the requests of ``method`` only."""

    def rule(request: Request, count: int) -> Answer | Request | None:
        return then(request, count) if request.method == method else None

    return rule


def test_a_server_that_ignores_if_none_match_makes_a_second_create_unknown(
    target: WebDAVTarget, proxy: Interposer, folder: tuple[str, Path]
) -> None:
    """A server that drops ``If-None-Match`` overwrites the object of the key (204): the target
    cannot say it created nothing, so the outcome is unknown, never a fresh object."""
    first = target.create(make("first"), "key")
    proxy.rules.append(
        on("PUT", lambda r, n: Request(r.method, r.path, _without(r, "If-None-Match"), r.body))
    )
    with pytest.raises(OutcomeUnknown, match="overwrote instead of creating"):
        target.create(make("second"), "key")
    assert first.remote_id in {p.name for p in folder[1].iterdir()}


def test_a_publish_a_server_overwrote_is_not_reported_published(
    target: WebDAVTarget, proxy: Interposer
) -> None:
    """The marker is put once (``If-None-Match: *``); a server that overwrites it (204)
    answers otherwise than "published before" (412), and the target says so."""
    ref = target.create(make(), "pub")
    target.publish(ref)
    proxy.rules.append(
        on("PUT", lambda r, n: Request(r.method, r.path, _without(r, "If-None-Match"), r.body))
    )
    with pytest.raises(TargetError, match="HTTP 204"):
        target.publish(ref)


def test_an_update_on_a_server_without_lock_is_refused_and_writes_nothing(
    target: WebDAVTarget, proxy: Interposer
) -> None:
    ref = target.create(make("v1"), "nolock")
    proxy.rules.append(on("LOCK", lambda r, n: Answer(405)))
    with pytest.raises(TargetError, match="does not support LOCK"):
        target.update(ref, make("v2"))
    assert methods(proxy).count("PUT") == 1  # the create's
    assert target.read(ref.remote_id).body == "v1"


def test_a_lock_granted_without_a_token_is_refused_and_writes_nothing(
    target: WebDAVTarget, proxy: Interposer
) -> None:
    ref = target.create(make("v1"), "notoken")

    def strip_token(request: Request, count: int) -> Answer:
        answer = proxy.forward(request)
        answer.headers = {k: v for k, v in answer.headers.items() if k.lower() != "lock-token"}
        return answer

    proxy.rules.append(on("LOCK", strip_token))
    with pytest.raises(TargetError, match="no lock token"):
        target.update(ref, make("v2"))
    assert methods(proxy).count("PUT") == 1
    assert target.read(ref.remote_id).body == "v1"


def test_a_resource_deleted_before_the_lock_is_missing_and_not_recreated(
    target: WebDAVTarget, proxy: Interposer, folder: tuple[str, Path]
) -> None:
    """Deleted between the update's HEAD and its LOCK: the LOCK creates an empty resource
    (RFC 4918), which the update deletes again before it reports the object missing."""
    ref = target.create(make("v1"), "vanishing")
    path = folder[1] / ref.remote_id
    proxy.rules.append(on("LOCK", lambda r, n: path.unlink()))
    with pytest.raises(RemoteMissing, match="before it could be locked"):
        target.update(ref, make("v2"))
    assert not path.exists()
    assert methods(proxy).count("PUT") == 1


def test_an_accidental_resource_that_cannot_be_deleted_is_an_unknown_outcome(
    target: WebDAVTarget, proxy: Interposer, folder: tuple[str, Path]
) -> None:
    ref = target.create(make("v1"), "stuck")
    path = folder[1] / ref.remote_id
    proxy.rules.append(on("LOCK", lambda r, n: path.unlink()))
    proxy.rules.append(on("DELETE", lambda r, n: Answer(500)))
    with pytest.raises(OutcomeUnknown, match="could not be deleted"):
        target.update(ref, make("v2"))


def test_a_resource_deleted_between_the_read_and_the_write_is_missing(
    target: WebDAVTarget, proxy: Interposer, folder: tuple[str, Path]
) -> None:
    """Deleted on the server's disk while locked (no client could): the PUT creates it again
    (201), so the update deletes what it made and reports the object missing."""
    ref = target.create(make("v1"), "gone")
    path = folder[1] / ref.remote_id
    proxy.rules.append(on("PUT", lambda r, n: path.unlink() if n == 1 else None))
    with pytest.raises(RemoteMissing, match="vanished during the update"):
        target.update(ref, make("v2"))
    assert not path.exists()


def test_a_refused_write_of_a_resource_gone_meanwhile_is_missing_not_a_conflict(
    target: WebDAVTarget, proxy: Interposer, folder: tuple[str, Path]
) -> None:
    ref = target.create(make("v1"), "refused")
    path = folder[1] / ref.remote_id

    def gone_and_refused(request: Request, count: int) -> Answer | None:
        if count != 1:
            return None
        path.unlink()
        return Answer(412)

    proxy.rules.append(on("PUT", gone_and_refused))
    with pytest.raises(RemoteMissing):
        target.update(ref, make("v2"))


def test_a_refused_write_of_a_resource_still_there_is_a_conflict(
    target: WebDAVTarget, proxy: Interposer
) -> None:
    ref = target.create(make("v1"), "conflict")
    proxy.rules.append(on("PUT", lambda r, n: Answer(412) if n == 1 else None))
    with pytest.raises(VersionConflict):
        target.update(ref, make("v2"))
    assert target.read(ref.remote_id).body == "v1"


def test_a_redirect_is_an_error_not_followed(target: WebDAVTarget, proxy: Interposer) -> None:
    """A server that redirects a read to another object: the target reads what it asked for or
    nothing (a redirect followed would read another object as this one)."""
    other = target.create(make("another object"), "other")
    ref = target.create(make("this object"), "this")
    location = target.base_url + other.remote_id
    proxy.rules.append(
        on("GET", lambda r, n: Answer(302, {"Location": location}) if "this" in r.path else None)
    )
    with pytest.raises(TargetError, match="HTTP 302"):
        target.read(ref.remote_id)
    with pytest.raises(TargetError, match="HTTP 302"):
        target.find("this")


def test_a_connection_refused_is_not_sent_not_unknown() -> None:
    """Nothing listens (a port bound, never listened on, refuses every connection): nothing
    was sent, so a create is a plain TargetError, not an unknown outcome (which must be looked
    up before anything is tried again)."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{bound.getsockname()[1]}/"
        with WebDAVTarget(url, trust_env=False) as target:
            with pytest.raises(TargetError, match="not sent") as info:
                target.create(make(), "key")
            assert not isinstance(info.value, OutcomeUnknown)
            with pytest.raises(TargetError, match="not sent"):
                target.update(RemoteRef(key_slug("key") + ".json", "v"), make())


def _without(request: Request, name: str) -> dict[str, str]:
    return {k: v for k, v in request.headers.items() if k.lower() != name.lower()}
