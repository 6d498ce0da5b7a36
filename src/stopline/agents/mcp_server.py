"""``stopline mcp``: the agent commands as the tools of an MCP server (the official ``mcp``
SDK), over stdio or streamable HTTP.

The tools are generated from the agent command table (``commands/agent_table.py``): each
entry's name, help and JSON Schema, and the desk operation it runs. Arguments are checked by
the same field checks every shell uses (``commands/entry.validate``), then held to the input
limits of docs/records.md as one document (``core/limits.check``, as the HTTP API holds a
body); bad arguments come back as a tool error (``isError``) with the reason code
``invalid_input`` and nothing is written. A refusal is a tool error too, with its reason codes
and a sentence for each. No tool, argument or resource approves, rejects, edits, resumes,
closes or changes the registry. A tool runs in a worker thread, and ``wait_for_decision``
waits in the event loop between two reads: a waiting agent holds no thread, so no number of
waits keeps another agent's calls from running.

Every message an agent sends, on stdio and over HTTP, is read strictly before the SDK sees it
(``mcp_wire.py``): one that is not strict JSON (``NaN``, ``1e999``, a key given twice, a byte
that is not UTF-8, a lone surrogate) is answered with a JSON-RPC error ``invalid_input: ...``
and never reaches a tool.

Who the agent is: on stdio, the identity the server was started with (``--agent`` or
``STOPLINE_AGENT``); over HTTP, the actor whose API token (``stopline actors token NAME``) is
the request's bearer token, on every request. Either way the actor must be active and hold the
``agent`` role, and every tool call (each read of a wait, too) checks it against the registry
again first: an agent revoked or deactivated mid-session is refused ``actor_not_authorized``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any, BinaryIO, cast

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..commands.agent_table import AGENT_COMMANDS, AGENT_ENTRIES
from ..commands.entry import validate
from ..commands.schema import body_schema
from ..core import limits
from ..core.reasons import Reason
from ..core.step import AGENT
from .answers import AgentError, Answer, refusal
from .desk import POLL, AgentDesk
from .mcp_wire import MAX_MESSAGE, LockedLines, StrictLines, check_message, read_body, replay

log = logging.getLogger("stopline.mcp")

NAME = "stopline"
MAX_TOKEN = 512  # characters: a longer bearer token is no token of ours
WAIT = "wait_for_decision"  # the one tool that waits: in the event loop, not in a thread
AGENT_SCOPE_KEY = "stopline.agent"  # where the HTTP front door leaves the authenticated agent
INSTRUCTIONS = (
    "stopline records what you propose and waits for a person. Propose with propose_action,"
    " wait with wait_for_decision, and act only after begin_action succeeds on the approved"
    " digest; then record_outcome. Nothing you call approves anything."
)


def tools() -> list[types.Tool]:
    """The tool list: one tool per agent command, in table order."""
    return [
        types.Tool(
            name=entry.name,
            description=entry.help,
            inputSchema=body_schema(entry),
            annotations=types.ToolAnnotations(
                readOnlyHint=not entry.writes, destructiveHint=False, openWorldHint=False
            ),
        )
        for entry in AGENT_ENTRIES
    ]


def identity_refusal(desk: AgentDesk) -> Answer | None:
    """A refusal ``actor_not_authorized`` unless the desk's agent is, in the registry now, an
    active actor holding the agent role, and the registry chain holds (as the HTTP front door
    asks of every request)."""
    try:
        desk.check_identity(sound=True)
    except AgentError as exc:
        return refusal([Reason.ACTOR_NOT_AUTHORIZED], str(exc))
    return None


def run_tool(desk: AgentDesk, name: str, arguments: Any) -> Answer:
    """Check the agent against the registry and ``arguments`` against the tool's fields, then
    run its desk operation."""
    entry = AGENT_COMMANDS.get(name)
    if entry is None:
        return refusal([Reason.INVALID_INPUT], f"no tool is called {name!r}")
    refused = identity_refusal(desk)
    if refused is not None:
        return refused
    body = arguments if arguments is not None else {}
    values, problems = validate(entry, body)
    if not problems:  # the input limits of docs/records.md, as the HTTP API applies to a body
        problems = [str(v) for v in limits.check(body)]
    if problems:
        return refusal([Reason.INVALID_INPUT], *problems)
    operation: Callable[..., Answer] = getattr(desk, entry.operation)
    return operation(**values)


async def answer_tool(desk: AgentDesk, name: str, arguments: Any) -> Answer:
    """:func:`run_tool` in a worker thread; a wait is a read in a thread every
    :data:`~.desk.POLL` seconds, with the sleeps in the event loop."""
    values, problems = validate(AGENT_COMMANDS[WAIT], arguments) if name == WAIT else ({}, [])
    if name != WAIT or problems:
        return await anyio.to_thread.run_sync(run_tool, desk, name, arguments)
    deadline = anyio.current_time() + values.get("timeout", 30)
    once = {**arguments, "timeout": 0}
    while True:
        answer = await anyio.to_thread.run_sync(run_tool, desk, name, once)
        left = deadline - anyio.current_time()
        if not answer.ok or answer.data.get("status") != "waiting" or left <= 0:
            return answer
        await anyio.sleep(min(POLL, left))


def tool_result(answer: Answer) -> types.CallToolResult:
    plain = answer.to_plain()
    text = json.dumps(plain, sort_keys=True, ensure_ascii=False)
    if not answer.ok:
        text = f"refused ({', '.join(plain['refused'])}): " + " ".join(plain["explanation"])
        text += "\n" + json.dumps(plain, sort_keys=True, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structuredContent=plain,
        isError=not answer.ok,
    )


def build_server(desk_for: Callable[[Any], AgentDesk | None]) -> Server[Any, Any]:
    """The MCP server. ``desk_for(request)``: the desk of the agent a request comes from (the
    HTTP request, or ``None`` on stdio), or ``None`` when it is no agent."""
    server: Server[Any, Any] = Server(NAME, instructions=INSTRUCTIONS)

    @server.list_tools()  # type: ignore[no-untyped-call,untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return tools()

    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        request = server.request_context.request
        desk = desk_for(request)
        if desk is None:
            return tool_result(refusal([Reason.ACTOR_NOT_AUTHORIZED], "no agent identity"))
        try:
            answer = await answer_tool(desk, name, arguments)
        except Exception as error:  # reported to the agent, logged, never swallowed
            log.exception("tool %s failed", name)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"internal error: {error}")],
                isError=True,
            )
        return tool_result(answer)

    return server


# --- stdio ------------------------------------------------------------------------------------


async def serve_stdio(
    desk: AgentDesk, source: BinaryIO | None = None, sink: BinaryIO | None = None
) -> None:
    """Serve ``desk`` on stdio (``source``, ``sink``: binary files; the process's stdin and
    stdout by default): each line read strictly (:class:`~.mcp_wire.StrictLines`), each answer
    one whole line (:class:`~.mcp_wire.LockedLines`)."""
    from mcp.server.stdio import stdio_server

    out = LockedLines(sink if sink is not None else sys.stdout.buffer)
    lines = StrictLines(source if source is not None else sys.stdin.buffer, out)
    server = build_server(lambda request: desk)
    # the SDK reads and writes text files: these two iterate lines and write lines
    async with stdio_server(stdin=cast(Any, lines), stdout=cast(Any, out)) as (read, write):
        await server.run(read, write, server.create_initialization_options())


# --- streamable HTTP ----------------------------------------------------------------------------


def http_app(desk_of: Callable[[str], AgentDesk], authenticate: Callable[[str], Any]) -> Starlette:
    """The streamable HTTP app at ``/mcp``. ``authenticate(token)``: the actor an API token
    names (``None`` when none); only an active actor holding the agent role gets through."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    def desk_for(request: Any) -> AgentDesk | None:
        scope = getattr(request, "scope", None) or {}
        name = scope.get(AGENT_SCOPE_KEY)
        return desk_of(name) if isinstance(name, str) else None

    manager = StreamableHTTPSessionManager(
        app=build_server(desk_for), stateless=True, max_request_body_size=MAX_MESSAGE
    )

    async def front_door(scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        actor = None
        if scheme.lower() == "bearer" and 0 < len(token.strip()) <= MAX_TOKEN:
            actor = await anyio.to_thread.run_sync(authenticate, token.strip())
        if actor is None or not actor.active or AGENT not in actor.roles:
            why = "an agent's API token is required (Authorization: Bearer TOKEN)"
            if actor is not None and not actor.active:
                why = f"{actor.name} is not an active actor"
            elif actor is not None:
                why = f"{actor.name} does not hold the {AGENT} role"
            response = JSONResponse({"error": "unauthorized", "detail": why}, status_code=401)
            await response(scope, receive, send)
            return
        scope[AGENT_SCOPE_KEY] = actor.name
        if scope["method"] == "POST":  # the message, read strictly before the SDK reads it
            body = await read_body(receive, manager.max_request_body_size)
            if body is None:  # the client left
                return
            if len(body) > manager.max_request_body_size:  # as the SDK answers it
                await PlainTextResponse("Request body too large", 413)(scope, receive, send)
                return
            _, refused = await anyio.to_thread.run_sync(check_message, body)
            if refused is not None:
                await JSONResponse(refused.to_plain(), status_code=400)(scope, receive, send)
                return
            receive = replay(body, receive)
        await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=[Route("/mcp", endpoint=_Asgi(front_door))], lifespan=lifespan)


class _Asgi:
    """An ASGI callable as a route's endpoint (a plain function would be read as a handler
    of requests and responses)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Any]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
