"""What every request handler shares: the store, the controller and the options."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import datetime

from starlette.requests import Request

from ..controller import Controller
from ..core.records import Actor, Item
from ..store import Store
from ..trust.authority import Trust
from .access import can_command, command_roles
from .delegation import NO_SERVER_KEY, Delegation, server_delegation
from .settings import Settings
from .signing import Signer


@dataclass
class Shared:
    store: Store
    settings: Settings
    controller: Controller = field(init=False)
    session_signer: Signer = field(init=False)
    csrf_signer: Signer = field(init=False)

    delegation: Delegation | None = None  # signed mode: the server's key (default: from env)

    def __post_init__(self) -> None:
        if self.delegation is None:
            self.delegation = server_delegation(self.store, Trust.from_env())
        d = self.delegation
        self.controller = Controller(
            self.store, trust=d.trust, signer=d.signer, via=d.via, unsigned_hint=NO_SERVER_KEY
        )
        secret = self.settings.secret or secrets.token_hex(32)  # sessions end with the process
        self.session_signer = Signer(secret, "session")
        self.csrf_signer = Signer(secret, "csrf")

    @property
    def mode(self) -> str:
        return "signed" if self.controller.signed_mode else "unsigned"

    def now(self) -> datetime:
        return self.controller.clock()

    def may_command(self, actor: Actor | None) -> bool:
        """Whether ``actor`` holds a role that gives a right to some command."""
        return can_command(actor, command_roles(self.store))

    def age(self, item: Item) -> float:
        """Seconds since the item last changed (for a stopped item: since it stopped)."""
        return max(0.0, (self.now() - item.updated_at).total_seconds())

    def overdue(self, item: Item) -> bool:
        return item.state.is_stop and self.age(item) > self.settings.overdue_after


def shared(request: Request) -> Shared:
    found: Shared = request.app.state.stopline
    return found
