"""Fixtures for target tests: a real WsgiDAV server process and a target-neutral harness."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from stopline.targets.base import Target
from stopline.targets.directory import DirectoryTarget
from stopline.targets.webdav import WebDAVTarget
from webdav_server import DavServer, own_dav_server, start_wsgidav  # noqa: F401


@pytest.fixture(scope="session")
def dav_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DavServer]:
    """One WsgiDAV process per test session (per xdist worker)."""
    server = start_wsgidav(tmp_path_factory.mktemp("dav-root"))
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Harness:
    """A target plus a view of where its objects live on disk."""

    kind: str
    target: Target
    folder: Path  # the folder holding this target's objects (and nothing else)
    sandbox: Path  # everything the target writes must stay inside ``folder`` under this
    delete: Callable[[str], None]  # remove an object behind the target's back
    before: set[Path] = field(default_factory=set)  # sandbox paths outside the folder at start

    def __post_init__(self) -> None:
        self.before = _outside(self.sandbox, self.folder)

    def objects(self) -> list[str]:
        """Names of the stored objects (hidden temp/lock files excluded)."""
        names = (p.name for p in self.folder.iterdir() if not p.name.startswith("."))
        return sorted(n for n in names if not n.endswith(".published"))

    def outside_files(self) -> list[Path]:
        """Paths under the sandbox, outside the folder, that did not exist before the test."""
        return sorted(_outside(self.sandbox, self.folder) - self.before)


def _outside(sandbox: Path, folder: Path) -> set[Path]:
    return {p for p in sandbox.rglob("*") if p != folder and folder not in p.parents}


def _directory_harness(tmp_path: Path) -> Iterator[Harness]:
    sandbox = tmp_path / "sandbox"
    folder = sandbox / "root"
    target = DirectoryTarget(folder)

    def delete(remote_id: str) -> None:
        shutil.rmtree(folder / remote_id)

    yield Harness("directory", target, folder, sandbox, delete)


def _webdav_harness(dav_server: DavServer) -> Iterator[Harness]:
    sub = f"t-{uuid.uuid4().hex[:12]}"
    folder = dav_server.root / sub
    folder.mkdir()
    target = WebDAVTarget(dav_server.url + sub, timeout=5.0, trust_env=False)

    def delete(remote_id: str) -> None:
        response = httpx.delete(target.base_url + remote_id, trust_env=False)
        assert response.status_code in (200, 204), response.status_code

    try:
        yield Harness("webdav", target, folder, dav_server.root, delete)
    finally:
        target.close()


@pytest.fixture(params=["directory", "webdav"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    """Each contract test runs once per target kind."""
    if request.param == "directory":
        yield from _directory_harness(tmp_path)
    else:
        yield from _webdav_harness(request.getfixturevalue("dav_server"))
