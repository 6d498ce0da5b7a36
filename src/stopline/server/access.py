"""Who is asking, and may they command at all.

The core decides every command (``actor_unknown``, ``actor_not_authorized``, ``self_approval``
and the rest). This module only answers two questions before a request reaches it: which actor
sent it (a bearer token, checked by :meth:`Controller.authenticate`), and whether that actor
holds any role that gives a right to some command the API offers (the roles of the command
table's entries, as the core's rights define them); an actor with none is a viewer (403), and
so is an agent.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..commands.entry import Shell
from ..commands.table import exposed
from ..controller import Controller
from ..core.records import Actor
from ..core.rights import roles_with_rights
from ..core.step import AGENT
from ..store import Store

MAX_TOKEN = 512


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else ``None``."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN:
        return None
    return token


def authenticate(controller: Controller, header: str | None) -> Actor | None:
    token = bearer_token(header)
    return None if token is None else controller.authenticate(token)


def command_roles(store: Store, names: Iterable[str] | None = None) -> frozenset[str]:
    """Every role that gives a right to some command of the API under the registered policies."""
    policies = [
        store.policy(name)
        for name in (store.insights.automation_names() if names is None else names)
    ]
    authorities = {entry.roles for entry in exposed(Shell.HTTP)}
    return roles_with_rights(authorities, [p for p in policies if p is not None])


def can_command(actor: Actor | None, roles: frozenset[str]) -> bool:
    """An active actor holding a role that gives some right; never an agent (an actor holding
    the agent role uses ``stopline mcp``; the core refuses its people's commands as well)."""
    if actor is None or not actor.active or AGENT in actor.roles:
        return False
    return bool(actor.roles & roles)
