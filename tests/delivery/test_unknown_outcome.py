"""An unknown outcome is never retried blind: the next attempt looks the object up by its key."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from stopline.core.artifacts import Artifact
from stopline.targets.base import RemoteRef, Target
from stopline.targets.directory import key_slug

from .conftest import Env, Site
from .proxies import LostReply, Proxy

from webdav_server import DavServer  # isort: skip


def article_1_key(env: Env) -> str:
    return str(
        {a["key"]: a for a in env.show()["artifacts"]}["article-1"]["intent"]["idempotency_key"]
    )


def first_attempt_creates(env: Env) -> None:
    """The lost create was preceded by its intent, and followed by a retry, not a stop."""
    history = env.history()
    retries = [e for e in history if e["command"] == "retry"]
    assert [e["detail"]["class"] for e in retries] == ["outcome_unknown"]
    intents = [e for e in history if e["command"] == "intent" and e["detail"]["key"] == "article-1"]
    assert len(intents) == 1 and intents[0]["seq"] < retries[0]["seq"]


@pytest.mark.parametrize("lands", [True, False], ids=["landed", "lost"])
def test_a_create_with_an_unknown_outcome_is_looked_up_before_it_is_repeated(
    env: Env, lands: bool
) -> None:
    """After OutcomeUnknown the next attempt finds by key first; one object per artifact."""
    env.work(wrap=lambda t: LostReply(t, lands=lands))
    item = env.assert_one_object_per_artifact()
    assert item["state"] == "completed"
    key = article_1_key(env)
    creates = [c for c in env.calls("create") if c["arg"] == key]
    finds = [c for c in env.calls("find") if c["arg"] == key]
    assert (len(creates), len(finds)) == (1 if lands else 2, 1)
    calls = env.calls("create", "find")
    assert calls.index(finds[0]) > calls.index(creates[0])  # looked up after the lost reply
    binds = {
        e["detail"]["key"]: e["detail"]["operation"]
        for e in env.history()
        if e["command"] == "bind"
    }
    assert binds == {"article-1": "found" if lands else "create", "article-2": "create"}
    first_attempt_creates(env)
    env.verify_clean()


class PausingServer(Proxy):
    """SIGSTOPs the WebDAV server during the first create, so the client times out; SIGCONT
    afterwards, and waits until the request the client gave up on has landed."""

    def __init__(self, inner: Target, server: DavServer, folder: Path) -> None:
        super().__init__(inner)
        self.server = server
        self.folder = folder
        self.tripped = False

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        if self.tripped or not idempotency_key.endswith(":article-1"):
            return self.inner.create(artifact, idempotency_key)
        self.tripped = True
        self.server.pause()
        try:
            return self.inner.create(artifact, idempotency_key)
        finally:
            self.server.resume()
            self._landed(self.folder / f"{key_slug(idempotency_key)}.json")

    @staticmethod
    def _landed(path: Path) -> None:
        deadline = time.monotonic() + 60  # a bound on a hang, not on speed
        while time.monotonic() < deadline:
            try:
                json.loads(path.read_bytes())
                return
            except (OSError, ValueError):
                time.sleep(0.02)
        raise AssertionError(f"{path} never landed")


def test_a_put_the_stopped_server_never_answered_is_found_not_repeated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], own_dav_server: DavServer
) -> None:
    """A PUT the SIGSTOPped server never answered lands later and is bound, not repeated."""
    folder = own_dav_server.root / "drafts"
    folder.mkdir()
    site = Site(
        "webdav",
        {"kind": "webdav", "base_url": f"{own_dav_server.url}drafts/"},
        folder,
        tmp_path / "attic",
    )
    env = Env(tmp_path, site, capsys)
    # The client's usual 5 s timeout: only the call to the stopped server runs into it; every
    # other call of the run has the same margin on a loaded machine.
    env.work(wrap=lambda t: PausingServer(t, own_dav_server, folder))
    item = env.assert_one_object_per_artifact()
    assert item["state"] == "completed"
    key = article_1_key(env)
    assert [c["op"] for c in env.calls("create", "find") if c["arg"] == key] == ["create", "find"]
    binds = {
        e["detail"]["key"]: e["detail"]["operation"]
        for e in env.history()
        if e["command"] == "bind"
    }
    assert binds["article-1"] == "found"
    first_attempt_creates(env)
    env.verify_clean()
