"""``stopline mcp``: serve the agent commands as MCP tools, over stdio or streamable HTTP
(``agents/mcp_server.py``; the ``agents`` extra installs the MCP SDK)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import UsageError
from .options import lazy

if TYPE_CHECKING:
    from ..store import Store

AGENT_ENV = "STOPLINE_AGENT"
HELP = "serve the agent commands to AI agents as MCP tools (stdio, or streamable HTTP)"
EPILOG = (
    "On stdio (the default) the server speaks for one agent: --agent NAME (env STOPLINE_AGENT),"
    " an actor holding the agent role. With --http it listens on http://HOST:PORT/mcp and each"
    " request names its agent by an API token (Authorization: Bearer TOKEN, from `stopline"
    " actors token NAME`). --app registers the agent automations an app declares (App(agents="
    "[AgentAutomation(...)])) first. No tool approves, rejects, edits, resumes or closes"
    " anything (docs/agents.md)."
)


def cmd_mcp(args: argparse.Namespace, store: Store, out: Any) -> int:
    try:
        import anyio

        from ..agents.answers import AgentError
        from ..agents.desk import AgentDesk
        from ..agents.mcp_server import http_app, serve_stdio
    except ImportError as exc:
        raise UsageError(
            f"the MCP server needs the agents extra: pip install 'stopline[agents]' ({exc})"
        ) from exc
    from ..controller import Controller
    from .signing import host_trust

    if args.app:
        from ..runtime.loader import load_app
        from ..runtime.scheduler import Scheduler

        Scheduler(store, load_app(args.app)).register()
    trust = host_trust()
    if not args.http:
        agent = args.agent or os.environ.get(AGENT_ENV, "")
        if not agent:
            raise UsageError(f"name the agent: --agent NAME (or {AGENT_ENV})")
        desk = AgentDesk(store, agent, trust=trust, host_trust=False)
        try:
            desk.check_identity()
        except AgentError as exc:
            raise UsageError(str(exc)) from exc
        anyio.run(serve_stdio, desk)
        return 0
    import uvicorn

    controller = Controller(store, trust=trust)

    def desk_of(name: str) -> AgentDesk:
        return AgentDesk(store, name, trust=trust, host_trust=False)

    authenticate: Callable[[str], Any] = controller.authenticate
    app = http_app(desk_of, authenticate)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def add_mcp_command(add: Callable[..., argparse.ArgumentParser]) -> None:
    p = add("mcp", lazy("mcp", "cmd_mcp"), HELP)
    p.epilog = EPILOG
    p.add_argument(
        "--agent", metavar="NAME", help=f"stdio: the agent's actor name (env {AGENT_ENV})"
    )
    p.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    p.add_argument(
        "--host",
        default=os.environ.get("STOPLINE_MCP_HOST", "127.0.0.1"),
        help="env STOPLINE_MCP_HOST",
    )
    p.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("STOPLINE_MCP_PORT", "8421")),
        help="env STOPLINE_MCP_PORT",
    )
    p.add_argument("--app", metavar="APP", help="register the agent automations of APP first")
