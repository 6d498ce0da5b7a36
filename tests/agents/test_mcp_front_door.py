"""The MCP server's own rules, in process (``agents/mcp_server.py``): the HTTP front door's
bearer token, the agent role and an active actor, checked before any tool runs; a tool name
that is no tool; what a refusal says; a request with no agent behind it; the tools' hints.
The end-to-end tests (``test_mcp.py``) drive a real server; each test here was missing while a
mutant of the module passed them."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.memory import create_connected_server_and_client_session

from helpers import in_thread
from stopline.agents.answers import Answer, refusal
from stopline.agents.desk import AgentDesk
from stopline.agents.mcp_server import (
    MAX_TOKEN,
    WAIT,
    build_server,
    http_app,
    run_tool,
    tool_result,
    tools,
)
from stopline.commands.agent_table import AGENT_ENTRIES
from stopline.controller import Controller
from stopline.core.reasons import Reason
from stopline.core.records import Actor
from stopline.store import Store, raw

from .conftest import AGENT, AUTOMATION, AgentLab


def test_a_tool_is_read_only_exactly_when_its_command_writes_nothing() -> None:
    listed = {tool.name: tool for tool in tools()}
    assert [tool.name for tool in tools()] == [entry.name for entry in AGENT_ENTRIES]
    assert any(entry.writes for entry in AGENT_ENTRIES)
    assert any(not entry.writes for entry in AGENT_ENTRIES)
    for entry in AGENT_ENTRIES:
        hints = listed[entry.name].annotations
        assert hints is not None and hints.readOnlyHint is (not entry.writes)
        assert hints.destructiveHint is False


def test_a_name_that_is_no_tool_runs_nothing() -> None:
    """No desk is given: a name that is no tool is refused before any desk is used."""
    answer = run_tool(None, "approve", {"item": "x"})  # type: ignore[arg-type]
    assert not answer.ok
    plain = answer.to_plain()
    assert plain["refused"] == [Reason.INVALID_INPUT]
    assert "no tool is called 'approve'" in " ".join(plain["explanation"])


def test_a_refusal_says_its_reasons_and_why_in_its_text() -> None:
    result = tool_result(refusal([Reason.INVALID_INPUT], "item: is required"))
    assert result.isError is True
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("refused (invalid_input): item: is required\n")


def test_a_request_with_no_agent_behind_it_is_refused() -> None:
    async def call() -> Any:
        server = build_server(lambda request: None)
        async with create_connected_server_and_client_session(server) as session:
            return await session.call_tool(AGENT_ENTRIES[0].name, {})

    result = in_thread(anyio.run, call)
    assert result.isError is True
    assert result.structuredContent["refused"] == [Reason.ACTOR_NOT_AUTHORIZED]


class Door:
    """The front door with a registry of one token: who asked, and with what."""

    def __init__(self, actor: Actor | None) -> None:
        self.actor = actor
        self.asked: list[str] = []

    def authenticate(self, token: str) -> Actor | None:
        self.asked.append(token)
        return self.actor

    def status(self, header: str | None) -> tuple[int, dict[str, Any]]:
        """What the front door answers a request with ``header`` (each case here is turned
        away before the MCP session manager, so the app's lifespan is not needed)."""
        app = http_app(lambda name: None, self.authenticate)  # type: ignore[arg-type,return-value]
        headers = {} if header is None else {"Authorization": header}

        async def post() -> httpx.Response:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://door") as client:
                return await client.post("/mcp", headers=headers, json={})

        response = in_thread(anyio.run, post)
        return response.status_code, response.json() if response.status_code == 401 else {}


AGENT_ACTOR = Actor("scout", frozenset({"agent"}))


@pytest.mark.parametrize(
    "header",
    [None, "", "Basic dG9rZW4=", "Token tok", "Bearer ", "Bearer " + "t" * (MAX_TOKEN + 1)],
)
def test_no_token_of_ours_is_looked_up(header: str | None) -> None:
    door = Door(AGENT_ACTOR)
    status, body = door.status(header)
    assert status == 401 and body["error"] == "unauthorized"
    assert door.asked == []


def test_a_token_is_at_most_512_characters_as_documented() -> None:
    assert MAX_TOKEN == 512
    door = Door(AGENT_ACTOR)
    assert door.status("Bearer " + "t" * 513)[0] == 401 and door.asked == []


def test_the_longest_token_is_looked_up() -> None:
    door = Door(None)
    assert door.status("bearer " + "t" * MAX_TOKEN)[0] == 401
    assert door.asked == ["t" * MAX_TOKEN]


@pytest.mark.parametrize(
    ("actor", "detail"),
    [
        (None, "an agent's API token is required"),
        (Actor("scout", frozenset({"agent"}), active=False), "scout is not an active actor"),
        (Actor("alice", frozenset({"approver", "operator"})), "alice does not hold the agent role"),
    ],
)
def test_only_an_active_agent_gets_through(actor: Actor | None, detail: str) -> None:
    door = Door(actor)
    status, body = door.status("Bearer tok")
    assert status == 401 and detail in body["detail"]
    assert door.asked == ["tok"]


class Waiting(AgentDesk):
    """A desk that says when a wait has begun reading (from its worker thread)."""

    def __init__(self, store: Store, began: anyio.Event) -> None:
        super().__init__(store, AGENT)
        self.began = began

    def wait(self, item: str, digest: str | None = None, timeout: int = 30) -> Answer:
        anyio.from_thread.run_sync(self.began.set)
        return super().wait(item, digest, timeout)


def test_a_waiting_agent_holds_no_thread_another_call_needs(lab: AgentLab) -> None:
    """With one worker thread for the tools, a wait on a proposal still leaves another call
    free to run (over HTTP, another agent's), and answers approved once a person approves.
    (Before, a wait slept in its thread: 40 waits held every thread for up to 300 s.)"""
    store = lab.store()
    made = AgentDesk(store, AGENT).propose(AUTOMATION, "k", "restart", "x", {"n": 1}, {})
    ref, digest = made.data["ref"], made.data["digest"]

    async def main() -> tuple[Any, Any]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 1
        began = anyio.Event()
        server = build_server(lambda request: Waiting(store, began))
        waited: list[Any] = []
        async with (
            create_connected_server_and_client_session(server) as session,
            anyio.create_task_group() as group,
        ):

            async def wait() -> None:
                args = {"item": ref, "digest": digest, "timeout": 90}
                waited.append(await session.call_tool(WAIT, args))

            group.start_soon(wait)
            await began.wait()
            with anyio.fail_after(30):  # the wait holds its thread 90 s: a failure
                read = await session.call_tool("get_item", {"item": ref})
            decided = await anyio.to_thread.run_sync(
                lambda: Controller(store).approve(ref, proposal=digest, actor="alice")
            )
            assert decided.applied
        return read, waited[0]

    try:
        read, waited = in_thread(anyio.run, main)
    finally:
        store.close()
    assert read.isError is False and read.structuredContent["state"] == "awaiting_approval"
    assert waited.isError is False and waited.structuredContent["status"] == "approved"


def test_no_agent_is_anybody_while_the_registry_chain_does_not_hold(lab: AgentLab) -> None:
    """As the HTTP front door refuses every token while the actors' tables and the registry
    chain disagree, a tool call (on stdio too) is refused then: even the agent's own reads."""
    store = lab.store()
    try:
        desk = AgentDesk(store, AGENT)
        assert run_tool(desk, "list_items", {}).ok
        with raw.writing(store) as cur:  # a database writer's edit the chain does not record
            cur.execute("UPDATE actors SET active = NOT active WHERE name = 'alice'")
        answer = run_tool(desk, "list_items", {})
        assert not answer.ok
        assert answer.to_plain()["refused"] == [Reason.ACTOR_NOT_AUTHORIZED]
    finally:
        store.close()
