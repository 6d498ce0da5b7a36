"""Idempotent completion: a completed item is left as it is, with no remote call at all."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stopline.cli.main import main
from stopline.targets.directory import DirectoryTarget
from stopline.targets.webdav import WebDAVTarget

from .conftest import ITEM, Env

OPS = ("create", "update", "read", "find", "publish")


@pytest.fixture
def target_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """Every call of every directory or WebDAV target in this process, however it was built."""
    seen: list[tuple[str, str]] = []
    for cls in (DirectoryTarget, WebDAVTarget):
        for op in OPS:
            original = getattr(cls, op)

            def counted(self: Any, *args: Any, _op: str = op, _orig: Any = original) -> Any:
                seen.append((type(self).__name__, _op))
                return _orig(self, *args)

            monkeypatch.setattr(cls, op, counted)
    yield seen


def items_and_events(env: Env) -> dict[str, Any]:
    tables = env.dump()
    return {k: tables[k] for k in ("items", "events")}


def quiet(env: Env) -> tuple[Any, ...]:
    """Everything a remote call could leave behind: the database, the files, the server log."""
    return (items_and_events(env), env.site.snapshot(), env.site.settled_requests())


def fresh_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A demo database and drafts folder of this test (the demo's targets open their folder
    once per process, so the ones an earlier test opened are forgotten)."""
    from stopline.examples import demo

    for automation in demo.app.automations:
        if hasattr(automation.target, "_target"):
            monkeypatch.setattr(automation.target, "_target", None)
    drafts = tmp_path / "drafts"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STOPLINE_DEMO_DRAFTS", str(drafts))
    return f"sqlite:///{tmp_path / 'demo.db'}", drafts


@pytest.mark.parametrize("revised", [False, True], ids=["completed", "revision_completed"])
def test_finalize_of_a_completed_item_is_a_zero_write_with_no_remote_call(
    env: Env, target_calls: list[tuple[str, str]], revised: bool
) -> None:
    """finalize: zero_write already_completed, no read, no write, nothing on the server."""
    env.deliver()
    if revised:
        env.applied(*env.revise(), state="revision_prepared")
        env.work()
        assert env.show()["state"] == "revision_completed"
    assert target_calls, "the counter sees the worker's calls"
    target_calls.clear()
    before = quiet(env)
    state = "revision_completed" if revised else "completed"
    for extra in ([], ["--idempotency-key", "fin-1"], ["--idempotency-key", "fin-1"]):
        code, doc = env.cli("finalize", ITEM, *extra)
        assert (code, doc["decision"], doc["reasons"], doc["state"], doc["sequence"]) == (
            0,
            "zero_write",
            ["already_completed"],
            state,
            None,
        )
    done = env.sub("finalize", ITEM)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reasons"] == ["already_completed"]
    assert target_calls == []
    assert quiet(env) == before


def test_rerunning_the_worker_and_the_schedule_makes_no_remote_call(
    env: Env, target_calls: list[tuple[str, str]]
) -> None:
    """stopline run --once again, in process and as a program: the completed item is untouched."""
    env.deliver()
    calls = len(env.calls())
    target_calls.clear()
    before = quiet(env)
    env.work()
    done = env.work_cli()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["steps"] == 0
    assert target_calls == [] and len(env.calls()) == calls
    assert quiet(env) == before

    env.applied(*env.revise(), state="revision_prepared")
    env.work()
    calls = len(env.calls())
    before = quiet(env)
    done = env.work_cli()
    assert done.returncode == 0, done.stderr
    assert len(env.calls()) == calls
    assert quiet(env) == before


def test_rerunning_the_demo_makes_no_remote_call(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target_calls: list[tuple[str, str]],
) -> None:
    """`stopline demo` a second time: the delivered drafts are neither read nor rewritten."""
    url, drafts = fresh_demo(tmp_path, monkeypatch)
    assert main(["demo", "--db", url, "--json"]) == 0
    capsys.readouterr()
    assert main(["show", "weekly-digest/2026-W48", "--db", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "completed"
    assert ("DirectoryTarget", "create") in target_calls
    files = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in drafts.rglob("*") if p.is_file()}
    target_calls.clear()
    assert main(["demo", "--db", url, "--json"]) == 0
    assert target_calls == []
    assert {
        p: (p.stat().st_mtime_ns, p.read_bytes()) for p in drafts.rglob("*") if p.is_file()
    } == files


def test_the_demo_prints_a_revise_command_that_revises_both_drafts_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo's printed revise command, pasted, revises both drafts in place."""
    url, drafts = fresh_demo(tmp_path, monkeypatch)
    assert main(["demo", "--db", url]) == 0
    text = capsys.readouterr().out
    lines = [line.strip() for line in text.splitlines() if "$ stopline revise" in line]
    assert len(lines) == 1, text
    argv = shlex.split(lines[0].removeprefix("$ "))[1:]
    assert argv.count("--artifact") == 2

    def show() -> dict[str, Any]:
        assert main(["show", "weekly-digest/2026-W48", "--db", url, "--json"]) == 0
        doc: dict[str, Any] = json.loads(capsys.readouterr().out)
        return doc

    before = show()
    assert main([*argv, "--db", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "revision_prepared"
    assert main(["run", "stopline.examples.demo:app", "--once", "--db", url, "--json"]) == 0
    capsys.readouterr()
    after = show()
    assert after["state"] == "revision_completed"
    old = {a["key"]: a for a in before["artifacts"]}
    folder = drafts / "digest"
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == sorted(
        a["remote_id"] for a in after["artifacts"]
    )
    target = DirectoryTarget(folder)
    for a in after["artifacts"]:
        assert a["remote_id"] == old[a["key"]]["remote_id"]
        assert a["content_hash"] != old[a["key"]]["content_hash"]
        assert target.read(a["remote_id"]).readback_hash == a["content_hash"]
