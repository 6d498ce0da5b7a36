"""Fixtures of the fuzz tests: the demo database, made once per session with a token for each
of its people, and a fresh copy of it wherever a test needs one."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from server.conftest import Demo, add_tokens, prepare_demo
from stopline.commands import sources
from stopline.store import open_store

PEOPLE = ("alice", "bob", "carol", "dana")


@dataclass
class DemoTemplate:
    """The demo database after one ``run --once``, with tokens; and what it holds."""

    path: Path
    tokens: dict[str, str]
    refs: list[str] = field(default_factory=list)  # ids and AUTOMATION/KEY
    digests: list[str] = field(default_factory=list)  # proposal and packet digests

    def copy(self, folder: Path, name: str = "fuzz.db") -> str:
        """A fresh copy of the template in ``folder``; its URL."""
        target = folder / name
        for suffix in ("-wal", "-shm"):
            Path(f"{target}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(self.path, target)
        return f"sqlite:///{target}"


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> DemoTemplate:
    root = tmp_path_factory.mktemp("fuzz-demo")
    db = root / "demo.db"
    url = f"sqlite:///{db}"
    prepare_demo(url, root / "drafts")
    tokens = add_tokens(Demo(url)).tokens
    store = open_store(url)
    try:
        items = store.list_items()
        refs = [ref for i in items for ref in (i.id, f"{i.automation}/{i.key}")]
        found = [d for i in items for d in (sources.proposal_digest(i), sources.packet_digest(i))]
    finally:
        store.close()
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    digests = sorted({str(d) for d in found if d})
    return DemoTemplate(db, tokens, refs, digests)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No STOPLINE_* variable and no ssh-agent from the environment of the run."""
    import os

    for name in list(os.environ):
        if name.startswith("STOPLINE_") and name not in ("STOPLINE_SLOW", "STOPLINE_FUZZ_EXAMPLES"):
            monkeypatch.delenv(name)
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    yield
