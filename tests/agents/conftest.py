"""Agent tests: a database with an agent automation and its actors, the real ``stopline``
command line, and the real MCP client over stdio and streamable HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from server.conftest import start_server  # noqa: F401  (the one server launcher)
from server.httphelp import Server, server_env
from stopline.controller import Controller
from stopline.core.policy import ApprovalPolicy, ApprovalRule, RetryPolicy
from stopline.runtime.automation import AgentAutomation, App
from stopline.runtime.scheduler import Scheduler
from stopline.store import open_store

AUTOMATION = "ops"
AGENT = "ops-bot"

APP = App(
    automations=[],
    agents=[
        AgentAutomation(
            AUTOMATION,
            approval=ApprovalPolicy(
                rules={
                    "restart": ApprovalRule(roles=("approver",), approvals=1),
                    "look": ApprovalRule(approvals=0),
                }
            ),
            retry=RetryPolicy(max_attempts=2, base_delay=0.0),
        )
    ],
    actors={AGENT: ("agent",), "alice": ("approver", "operator"), "mal": ("agent", "approver")},
)


@dataclass
class AgentLab:
    url: str
    path: Path

    def cli(self, *args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "stopline.cli.main", *args, "--db", self.url],
            capture_output=True,
            text=True,
            env=server_env({}),
            cwd=self.path,
            timeout=120,
        )
        assert done.returncode in ok, (args, done.returncode, done.stdout, done.stderr)
        return done

    def cli_json(self, *args: str, ok: tuple[int, ...] = (0,)) -> Any:
        return json.loads(self.cli(*args, "--json", ok=ok).stdout)

    def token(self, actor: str) -> str:
        return str(self.cli_json("actors", "token", actor)["token"])

    def store(self) -> Any:
        return open_store(self.url)

    def controller(self) -> Controller:
        return Controller(self.store())


@pytest.fixture
def lab(store_url: str, tmp_path: Path) -> AgentLab:
    """A fresh database (SQLite and PostgreSQL) with the agent automation and its actors."""
    url = store_url
    store = open_store(url)
    try:
        Scheduler(store, APP).register()
    finally:
        store.close()
    return AgentLab(url, tmp_path)


@pytest.fixture
def mcp_http(lab: AgentLab, start_server: Callable[..., Server]) -> Server:  # noqa: F811
    """``stopline mcp --http`` on the lab's database."""
    return start_server(lab.url, command=("mcp", "--http"), ready_path="/mcp")
