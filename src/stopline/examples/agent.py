"""A scripted agent (no model) that uses the real MCP client against ``stopline mcp``.

It inspects a service, proposes a restart through ``propose_action``, waits with
``wait_for_decision`` while a person approves with the CLI, takes the step with
``begin_action``, "restarts" the service (it appends a line to ``restarts.log``) and records the
outcome with ``record_outcome``. Run it (after ``pip install 'stopline[agents]'``)::

    python -m stopline.examples.agent --db sqlite:///agent-demo.db

and, in another terminal, the command it prints::

    stopline approve ops-agent/billing-api --proposal DIGEST --actor alice --db sqlite:///agent-demo.db

``app`` declares the agent automation and the demo's actors (``ops-bot`` holds the agent role,
``alice`` approves); ``stopline mcp --app stopline.examples.agent:app`` registers them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..core.policy import ApprovalPolicy, ApprovalRule, RetryPolicy
from ..runtime.automation import AgentAutomation, App

AUTOMATION = "ops-agent"
AGENT = "ops-bot"
SERVICE = "billing-api"

app = App(
    automations=[],
    agents=[
        AgentAutomation(
            AUTOMATION,
            approval=ApprovalPolicy(
                rules={"restart": ApprovalRule(roles=("approver",), approvals=1)},
                default=ApprovalRule(roles=("approver",), approvals=1),
            ),
            retry=RetryPolicy(max_attempts=3),
            description="restarts proposed by an AI agent",
        )
    ],
    actors={AGENT: ("agent",), "alice": ("approver", "operator")},
)


def inspect_service(name: str) -> dict[str, Any]:
    """What the agent sees (stands in for a metrics query)."""
    return {"service": name, "p99_ms": 4100, "error_rate": 0.21, "healthy": False}


def restart(service: str, log: Path) -> dict[str, Any]:
    """The action itself (stands in for a call to the orchestrator)."""
    with log.open("a") as out:
        out.write(f"restarted {service}\n")
    return {"restarted": service}


async def agent(db: str, wait: int, log: Path, say: Any = print) -> int:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "stopline.cli.main",
            "mcp",
            "--db",
            db,
            "--agent",
            AGENT,
            "--app",
            "stopline.examples.agent:app",
        ],
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        async def call(tool: str, **arguments: Any) -> dict[str, Any]:
            result = await session.call_tool(tool, arguments)
            answer = dict(result.structuredContent or {})
            if result.isError:
                raise SystemExit(
                    f"{tool} refused: {answer.get('refused')} {answer.get('explanation')}"
                )
            return answer

        evidence = inspect_service(SERVICE)
        proposed = await call(
            "propose_action",
            automation=AUTOMATION,
            key=SERVICE,
            action="restart",
            target=SERVICE,
            params={"service": SERVICE, "grace_seconds": 30},
            evidence=evidence,
            rationale="p99 latency 4.1 s and 21% errors",
        )
        ref, digest = proposed["ref"], proposed["digest"]
        say(f"proposed: {ref} is {proposed['state']}, digest {digest}")
        if proposed["state"] == "completed":
            say("done already: nothing to do")
            return 0
        say(
            f"a person approves with:\n  stopline approve {ref} --proposal {digest} --actor alice --db {db}"
        )
        status = "waiting"
        left = wait
        while status == "waiting" and left > 0:
            step = min(left, 30)
            decided = await call("wait_for_decision", item=ref, digest=digest, timeout=step)
            status, left = decided["status"], left - step
        say(f"decision: {status}")
        if status != "approved":
            return 3
        begun = await call("begin_action", item=ref, digest=digest)
        params = begun["proposal"]["params"]
        say(f"acting: {begun['state']}")
        result = restart(params["service"], log)
        done = await call("record_outcome", item=ref, digest=digest, status="done", result=result)
        say(f"recorded: {done['ref']} is {done['state']}")
        return 0


def main(argv: list[str] | None = None) -> int:
    import anyio

    parser = argparse.ArgumentParser(description="a scripted agent that proposes and waits")
    parser.add_argument("--db", default="sqlite:///agent-demo.db", help="the database URL")
    parser.add_argument("--wait", type=int, default=600, help="seconds to wait for a person")
    parser.add_argument("--log", default="restarts.log", help="where the restart is written")
    args = parser.parse_args(argv)
    code: int = anyio.run(agent, args.db, args.wait, Path(args.log))
    return code


if __name__ == "__main__":
    sys.exit(main())
