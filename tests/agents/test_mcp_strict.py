"""What reaches ``stopline mcp`` is what the agent sent, and only while the agent may send it.

Every JSON-RPC message is read strictly before the MCP SDK sees it (``agents/mcp_wire.py``):
``NaN``, ``1e999``, a key given twice, a byte that is not UTF-8 and a lone surrogate are
answered with a JSON-RPC error naming the problem, on stdio and over HTTP, and nothing is
written (before, the SDK recorded ``null``, the last duplicate and U+FFFD). On stdio, a revoked
agent is refused on its next call, reads included (before, only writes were).
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession

from helpers import dump, in_thread
from server.httphelp import server_env

from .conftest import AGENT, AgentLab
from .mcpclient import call, stdio_session
from .test_mcp import PROPOSAL

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
ANSWER_WAIT = 120  # seconds a test waits for a line before it fails (never a timing check)

# (what stands for the proposal's params in the raw message, the problem named, the code)
BAD: list[tuple[bytes, str, int]] = [
    (b'{"n": NaN}', "not_finite", INVALID_REQUEST),
    (b'{"n": -Infinity}', "not_finite", INVALID_REQUEST),
    (b'{"n": 1e999}', "not_finite", INVALID_REQUEST),
    (b'{"a": 1, "a": 2}', "duplicate_key", INVALID_REQUEST),
    (b'{"s": "\\ud800"}', "unicode", INVALID_REQUEST),
    (b'{"s": "caf\xe9"}', "not UTF-8", PARSE_ERROR),
]


def raw_call(number: int, params: bytes) -> bytes:
    """A ``tools/call`` of propose_action whose params are the raw bytes ``params``."""
    arguments = {**PROPOSAL, "key": f"raw-{number}", "params": "@PARAMS@"}
    message = {
        "jsonrpc": "2.0",
        "id": number,
        "method": "tools/call",
        "params": {"name": "propose_action", "arguments": arguments},
    }
    return json.dumps(message).encode().replace(b'"@PARAMS@"', params)


def _dump(lab: AgentLab) -> Any:
    store = lab.store()
    try:
        return dump(store)
    finally:
        store.close()


def assert_refused(answer: dict[str, Any], number: int, problem: str, code: int) -> None:
    assert answer["id"] == number, answer
    error = answer["error"]
    assert error["code"] == code, answer
    assert error["message"].startswith("invalid_input: "), answer
    assert problem in error["message"], answer
    assert error["data"]["reasons"] == ["invalid_input"], answer


class Stdio:
    """``stopline mcp --agent AGENT`` on stdio, driven line by line."""

    def __init__(self, lab: AgentLab) -> None:
        command = [sys.executable, "-m", "stopline.cli.main", "mcp", "--db", lab.url]
        self.process = subprocess.Popen(
            [*command, "--agent", AGENT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=server_env({}),
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self) -> dict[str, Any]:
        line = self.lines.get(timeout=ANSWER_WAIT)
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    def start(self) -> None:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
        hello["clientInfo"] = {"name": "raw", "version": "1"}
        self.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
            ).encode()
        )
        assert self.answer()["id"] == 0
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(ANSWER_WAIT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def test_stdio_answers_a_message_that_is_not_strict_json_with_its_problem(lab: AgentLab) -> None:
    """Each bad line is answered in turn with an error naming its problem, under its own id;
    the session goes on, and no item was started."""
    before = _dump(lab)
    server = Stdio(lab)
    try:
        server.start()
        answers = []
        for number, (params, _, _) in enumerate(BAD, start=1):
            server.send(raw_call(number, params))
            answers.append(server.answer())
        server.send(b'{"jsonrpc": "2.0", "id": 99, "method": "tools/list"}')
        listed = server.answer()
    finally:
        server.close()
    for number, ((_, problem, code), answer) in enumerate(zip(BAD, answers, strict=True), 1):
        assert_refused(answer, number, problem, code)
    assert listed["id"] == 99 and listed["result"]["tools"]
    assert _dump(lab) == before


def test_stdio_answers_a_line_it_cannot_read_under_no_id(lab: AgentLab) -> None:
    before = _dump(lab)
    server = Stdio(lab)
    try:
        server.start()
        server.send(b'{"jsonrpc": "2.0", "id": 5, "method": "tools/list"')
        cut = server.answer()
        server.send(b'{"jsonrpc": "2.0", "id": 5, "id": 6, "method": "tools/list"}')
        twice = server.answer()
    finally:
        server.close()
    assert cut["id"] is None and cut["error"]["code"] == PARSE_ERROR
    assert cut["error"]["message"].startswith("invalid_input: $: syntax: not JSON")
    assert twice["id"] is None and "$.id: duplicate_key" in twice["error"]["message"]
    assert _dump(lab) == before


def test_http_answers_a_message_that_is_not_strict_json_with_its_problem(
    mcp_http: Any, lab: AgentLab
) -> None:
    """Each bad body is answered 400 with an error naming its problem, under its own id, by
    the front door; no item was started."""
    token = lab.token(AGENT)  # issuing it writes to the registry
    before = _dump(lab)
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    with httpx.Client(base_url=mcp_http.base, headers=headers, timeout=ANSWER_WAIT) as client:
        for number, (params, problem, code) in enumerate(BAD, start=1):
            response = client.post("/mcp", content=raw_call(number, params))
            assert response.status_code == 400, (problem, response.text)
            assert_refused(response.json(), number, problem, code)
        listed = client.post("/mcp", json={"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
        assert listed.status_code == 200 and "propose_action" in listed.text
    assert _dump(lab) == before


@pytest.mark.parametrize("revoke", [(), ("--role", "agent")], ids=["actor", "role"])
def test_a_revoked_agent_is_refused_its_next_read_on_stdio(
    lab: AgentLab, revoke: tuple[str, ...]
) -> None:
    """The agent reads its item, a person revokes it (or its agent role) mid-session, and
    every call after that, reads and waits included, is refused actor_not_authorized."""
    after: list[Any] = []

    async def body(session: ClientSession) -> list[tuple[bool, dict[str, Any]]]:
        ok, proposed = await call(session, "propose_action", **PROPOSAL)
        assert ok
        ref = proposed["ref"]
        ok, seen = await call(session, "get_item", item=ref)
        assert ok and seen["state"] == "awaiting_approval"
        await anyio.to_thread.run_sync(lambda: lab.cli("actors", "revoke", AGENT, *revoke))
        after.append(await anyio.to_thread.run_sync(_dump, lab))
        return [
            await call(session, "get_item", item=ref),
            await call(session, "list_items"),
            await call(session, "wait_for_decision", item=ref, timeout=0),
            await call(session, "propose_action", **{**PROPOSAL, "key": "another"}),
        ]

    async def main() -> list[tuple[bool, dict[str, Any]]]:
        async with stdio_session(lab.url, AGENT) as session:
            return await body(session)

    answers = in_thread(anyio.run, main)
    for ok, answer in answers:
        assert not ok and answer["refused"] == ["actor_not_authorized"], answer
        assert "state" not in answer and "items" not in answer, answer
    assert _dump(lab) == after[0]
