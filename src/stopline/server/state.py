"""What every request handler shares: the store, the controller and the options."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from datetime import datetime

from itsdangerous import Signer, URLSafeTimedSerializer
from starlette.requests import Request

from ..controller import Controller
from ..core.records import Actor, Item
from ..store import Store
from ..trust.authority import Trust
from .access import can_command, command_roles
from .delegation import NO_SERVER_KEY, Delegation, server_delegation
from .settings import Settings

_HMAC_SHA256 = {"key_derivation": "hmac", "digest_method": hashlib.sha256}


@dataclass
class Shared:
    store: Store
    settings: Settings
    controller: Controller = field(init=False)
    sessions: URLSafeTimedSerializer = field(init=False)  # the signed, dated session cookie
    csrf: Signer = field(init=False)  # a form's CSRF token: the session id's signature

    delegation: Delegation | None = None  # signed mode: the server's key (default: from env)

    def __post_init__(self) -> None:
        if self.delegation is None:
            self.delegation = server_delegation(self.store, Trust.from_env())
        d = self.delegation
        self.controller = Controller(
            self.store, trust=d.trust, signer=d.signer, via=d.via, unsigned_hint=NO_SERVER_KEY
        )
        # Each purpose has its own salt, so a CSRF token is never accepted as a cookie or the
        # other way round; without a configured secret, sessions end with the process.
        secret = self.settings.secret or secrets.token_hex(32)
        self.sessions = URLSafeTimedSerializer(
            secret, salt="stopline:session", signer_kwargs=_HMAC_SHA256
        )
        self.csrf = Signer(
            secret, salt="stopline:csrf", key_derivation="hmac", digest_method=hashlib.sha256
        )

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
