"""The agent examples run as docs/agents.md says: a scripted agent on the real MCP client
waits while a person approves with the CLI, then acts once; the guard in a plain agent loop
does the same; run again, neither acts twice."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from proc import wait_for
from server.httphelp import server_env

from .conftest import AgentLab

REF = "ops-agent/billing-api"


def start(module: str, lab: AgentLab, *args: str) -> tuple[subprocess.Popen[str], Path]:
    out = lab.path / f"{module.rsplit('.', 1)[-1]}.out"
    process = subprocess.Popen(
        [sys.executable, "-m", module, "--db", lab.url, "--wait", "120", *args],
        cwd=lab.path,
        env=server_env({}),
        stdout=out.open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    return process, out


def waiting(lab: AgentLab) -> list[dict[str, Any]] | None:
    done = lab.cli("items", "--state", "awaiting_approval", "--json", ok=(0, 2))
    if done.returncode != 0:
        return None  # the example has not created its database yet
    items = json.loads(done.stdout)["items"]
    return [i for i in items if i["automation"] == "ops-agent"] or None


def approve_when_waiting(lab: AgentLab, process: subprocess.Popen[str], out: Path) -> str:
    def ready() -> list[dict[str, Any]] | None:
        assert process.poll() is None, out.read_text()
        return waiting(lab)

    found = wait_for(ready, 120, "the example's proposal", interval=0.2)
    ref = f"{found[0]['automation']}/{found[0]['key']}"
    shown = lab.cli_json("show", ref)
    lab.cli("approve", ref, "--proposal", shown["proposal"]["digest"], "--actor", "alice")
    return ref


def finish(process: subprocess.Popen[str], out: Path) -> str:
    try:
        code = process.wait(180)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(out.read_text()) from None
    text = out.read_text()
    assert code == 0, text
    return text


def test_the_scripted_mcp_agent(tmp_path: Path) -> None:
    lab = AgentLab(f"sqlite:///{tmp_path / 'agent-demo.db'}", tmp_path)
    process, out = start("stopline.examples.agent", lab)
    assert approve_when_waiting(lab, process, out) == REF
    text = finish(process, out)
    assert "decision: approved" in text and "is completed" in text, text
    assert (tmp_path / "restarts.log").read_text() == "restarted billing-api\n"
    again, out = start("stopline.examples.agent", lab)
    assert "done already" in finish(again, out)
    assert (tmp_path / "restarts.log").read_text() == "restarted billing-api\n"
    lab.cli("verify")


def test_the_guard_in_an_agent_loop(tmp_path: Path) -> None:
    lab = AgentLab(f"sqlite:///{tmp_path / 'agent-demo.db'}", tmp_path)
    process, out = start("stopline.examples.agent_loop", lab)
    ref = approve_when_waiting(lab, process, out)
    text = finish(process, out)
    assert "restart -> {'restarted': 'billing-api', 'grace': 30}" in text, text
    history = lab.cli_json("history", ref)["events"]
    again, out = start("stopline.examples.agent_loop", lab)
    assert "restart -> {'restarted': 'billing-api', 'grace': 30}" in finish(again, out)
    assert lab.cli_json("history", ref)["events"] == history  # nothing written, nothing run
    assert [e["command"] for e in history].count("execute") == 1
    lab.cli("verify")
