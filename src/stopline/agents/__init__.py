"""AI agents: what an agent may ask (``desk.py``, from ``commands/agent_table.py``), the MCP
server of ``stopline mcp`` (``mcp_server.py``, needs the ``agents`` extra) and the approval guard
for Python tool functions (``guard.py``)."""

from .guard import (
    ActionStopped,
    ApprovalGuard,
    ApprovalPending,
    ApprovalRejected,
    GuardError,
    Pending,
)

__all__ = [
    "ActionStopped",
    "ApprovalGuard",
    "ApprovalPending",
    "ApprovalRejected",
    "GuardError",
    "Pending",
]
