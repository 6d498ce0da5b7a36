"""The revision prerequisites of seed 000 are checked when `revise` is requested: zero-write.

Each prerequisite a real command sequence can reach is driven here through the command line
and real worker runs of the digest app (a folder target), on SQLite and on PostgreSQL. A refusal
leaves the database exactly as it was apart from one refusal audit row, makes no remote call,
and leaves the completed job finalizable (``zero_write`` / ``already_completed``). The
prerequisites no command sequence can reach are listed, with the reason, in docs/delivery.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from helpers import dump
from stopline.cli.main import main
from stopline.runtime.runner import run
from stopline.store import open_store

from .apps.digest_app import KEYS, build_app, read_calls

ITEM = "digest/w1"


@dataclass
class Lab:
    """One test's database (either store), folder target, app configuration and command line."""

    url: str
    tmp: Path
    capsys: pytest.CaptureFixture[str]
    config: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        folder = self.tmp / "drafts"
        folder.mkdir()
        self.config = {
            "target": {"kind": "directory", "root": str(folder)},
            "calls": str(self.tmp / "calls.jsonl"),
            "lease_seconds": 5.0,
        }

    def work(self, **config: Any) -> None:
        """``stopline run APP --once`` in process, with ``config`` changed first."""
        self.config.update(config)
        run(build_app(self.config), self.url, once=True, linger=0.5)

    def cli(self, *args: str) -> tuple[int, Any]:
        self.capsys.readouterr()
        code = main([*args, "--db", self.url, "--json"])
        out = self.capsys.readouterr().out
        return code, json.loads(out) if out.strip() else None

    def applied(self, *args: str, state: str) -> dict[str, Any]:
        code, doc = self.cli(*args)
        assert (code, doc["decision"], doc["state"]) == (0, "applied", state), doc
        return dict(doc)

    def show(self) -> dict[str, Any]:
        code, doc = self.cli("show", ITEM)
        assert code == 0, doc
        return dict(doc)

    def snapshot(self) -> tuple[Any, int, list[Any], list[tuple[str, bytes]]]:
        """Every table but ``refusals``, the refusal count, the remote calls, the folder."""
        store = open_store(self.url)
        try:
            rows = dump(store)
            refusals = sum(r.count for r in store.insights.refusal_counts())
        finally:
            store.close()
        folder = Path(self.config["target"]["root"])
        files = [(str(p), p.read_bytes()) for p in sorted(folder.rglob("*")) if p.is_file()]
        return rows, refusals, read_calls(self.config["calls"]), files

    def refused(self, args: Sequence[str], reasons: Sequence[str]) -> None:
        """``args`` exits 3 refused with exactly ``reasons``; nothing but one audit row written."""
        rows, refusals, calls, files = self.snapshot()
        code, doc = self.cli(*args)
        assert (code, doc["decision"], doc["sequence"]) == (3, "refused", None), doc
        assert sorted(doc["reasons"]) == sorted(reasons), doc
        after_rows, after_refusals, after_calls, after_files = self.snapshot()
        assert after_rows == rows, "a refused revise wrote to the database"
        assert after_refusals == refusals + 1, "a refusal leaves exactly one audit row"
        assert (after_calls, after_files) == (calls, files), "a refused revise reached the target"

    def still_finalizable(self, state: str = "completed") -> None:
        code, doc = self.cli("finalize", ITEM)
        assert (code, doc["decision"], doc["reasons"], doc["state"]) == (
            0,
            "zero_write",
            ["already_completed"],
            state,
        ), doc

    def revise(self, *keys: str, reason: str = "clearer wording") -> list[str]:
        args = ["revise", ITEM, "--actor", "olga", "--reason", reason]
        for key in keys or KEYS:
            args += ["--artifact", key]
        return args


@pytest.fixture
def lab(store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Lab:
    return Lab(store_url, tmp_path, capsys)


def test_no_revise_hook_refuses_the_request_and_the_job_stays_finalizable(lab: Lab) -> None:
    """Revisable by default but no revise hook: refused mode_forbids_revision, nothing written."""
    lab.work(revise="absent")
    assert lab.show()["state"] == "completed"
    lab.refused(lab.revise(), ["mode_forbids_revision"])
    lab.refused(lab.revise("article-1"), ["mode_forbids_revision"])
    lab.still_finalizable()
    item = lab.show()
    assert item["review_packet"]["void"] is False and item["revision"] is None
    before = lab.snapshot()[0]
    lab.work(revise="scope")  # a worker run finds nothing to claim (now with the hook)
    after = lab.snapshot()[0]
    assert (after["items"], after["events"]) == (before["items"], before["events"])
    lab.applied(*lab.revise(), state="revision_prepared")


def test_a_delivery_mode_that_is_not_revisable_refuses(lab: Lab) -> None:
    """DeliveryPolicy(revisable=False): refused mode_forbids_revision, zero writes."""
    lab.work(revisable=False)
    lab.refused(lab.revise(), ["mode_forbids_revision"])
    lab.still_finalizable()


def test_a_published_delivery_refuses(lab: Lab) -> None:
    """After the publication signal: refused published, zero writes, still finalizable."""
    lab.work(mode="publish")
    packet = lab.show()["review_packet"]["digest"]
    review = ["review", ITEM, "--packet", packet, "--verdict", "approve", "--actor", "olga"]
    lab.applied(*review, state="completed")
    lab.applied("publish", ITEM, "--packet", packet, "--actor", "pete", state="completed")
    assert lab.show()["publication"]["actor"] == "pete"
    lab.refused(lab.revise(), ["published"])
    lab.still_finalizable()


def test_another_revision_while_one_is_active_refuses(lab: Lab) -> None:
    """A prepared revision blocks a second request: revision_active (and the state), no write."""
    lab.work()
    lab.applied(*lab.revise(), state="revision_prepared")
    lab.refused(
        lab.revise("article-1", reason="another"),
        ["illegal_transition", "not_completed", "revision_active"],
    )


def test_a_resume_after_the_mode_changed_refuses(lab: Lab) -> None:
    """A failed revision is not resumed once the automation forbids revision: zero writes."""
    lab.work(revise="fail")
    lab.applied(*lab.revise(), state="revision_prepared")
    lab.work()
    assert lab.show()["state"] == "revision_failed"
    lab.work(revise="scope", revisable=False)  # registers the new policy; nothing to claim
    lab.refused(lab.revise(), ["mode_forbids_revision"])
    lab.work(revise="absent", revisable=True)
    lab.refused(lab.revise(), ["mode_forbids_revision"])
    lab.work(revise="scope")
    lab.applied(*lab.revise(), state="revision_prepared")
    lab.work()
    assert lab.show()["state"] == "revision_completed"
    lab.still_finalizable("revision_completed")


def test_the_worker_still_fails_a_revision_whose_hook_went_away(lab: Lab) -> None:
    """Defense in depth: the hook removed after the request, the worker fails it, no remote call."""
    lab.work()
    lab.applied(*lab.revise(), state="revision_prepared")
    calls = read_calls(lab.config["calls"])
    lab.work(revise="absent")
    item = lab.show()
    assert item["state"] == "revision_failed"
    assert item["revision"]["failure"]["reasons"] == ["mode_forbids_revision"]
    assert read_calls(lab.config["calls"]) == calls
