"""The real MCP client (the ``mcp`` SDK) against ``stopline mcp``, over stdio or HTTP."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from server.httphelp import server_env


@contextlib.asynccontextmanager
async def stdio_session(url: str, agent: str) -> AsyncIterator[ClientSession]:
    """A session with ``stopline mcp --agent AGENT`` started by the client on stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "stopline.cli.main", "mcp", "--db", url, "--agent", agent],
        env=server_env({}),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def http_session(base: str, token: str) -> AsyncIterator[ClientSession]:
    """A session with ``stopline mcp --http`` at ``base``, as the agent ``token`` names."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(120)) as client,
        streamable_http_client(f"{base}/mcp", http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    """``(ok, structured answer)`` of one tool call."""
    result = await session.call_tool(tool, arguments)
    assert result.structuredContent is not None, result
    return not result.isError, dict(result.structuredContent)
