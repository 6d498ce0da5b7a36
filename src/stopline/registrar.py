"""The actor registry as people change it: add, revoke, tokens, and who a token is.

Every change is one registry event (``core/registry.py``); decisions read actors and tokens
from the registry chain, never from a table alone. In signed mode actors and their roles come
from certificates the trust root signed (``stopline keys certify``), and a token authenticates
only if its actor signed its issue.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from datetime import datetime

from .core.canonical import format_time
from .core.names import ACTOR, ROLE, InvalidName, check_name, lookalike
from .core.records import Actor
from .core.registry import Registry
from .store import Store
from .trust.authority import Authority, Trust, token_problems
from .trust.documents import TOKEN, sign
from .trust.keys import Signer


class ActorError(ValueError):
    """A malformed actor-registry change (bad name or role)."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Registrar:
    """What the command layer does to the actor registry (``Controller`` is one)."""

    store: Store
    clock: Callable[[], datetime]
    trust: Trust | None
    signer: Signer | None

    def authority(self, registry: Registry | None = None) -> Authority | None:
        raise NotImplementedError

    def add_actor(self, name: str, roles: list[str]) -> Actor:
        """Add an actor (or roles to one). Names are normalised and checked (``core.names``);
        a name that looks like another registered actor's is refused. The roles kept are the
        ones the registry chain records, never a table's (a role written into the table by hand
        is not carried into the chain by the next legitimate change)."""
        if self.trust is not None:
            raise ActorError(
                "signed mode: actors and their roles come from certificates the trust root "
                "signed (stopline keys certify)"
            )
        name = _check_name(ACTOR, name)
        roles = [_check_name(ROLE, role) for role in roles]
        registry = self.store.registry().actors
        similar = lookalike(name, registry)
        if similar is not None:
            raise ActorError(
                f"actor name {name!r} looks like the registered actor {similar!r}; choose another"
            )
        existing = registry.get(name)
        merged = frozenset(roles) | (
            existing.roles if existing and existing.active else frozenset()
        )
        actor = Actor(name, merged, True)
        self.store.set_actor(actor, "add", {"roles": sorted(roles)}, self.clock())
        return actor

    def revoke_actor(self, name: str, role: str | None = None) -> Actor | None:
        """Revoke an actor, or one role. A name or role stored exactly as given is revoked even
        if it breaks today's rules (an older registry may hold one); else it is checked. What
        is revoked is the actor the registry chain records (one found only in the table, as a
        hand-inserted row would be, is revoked as the table has it)."""
        if self.trust is not None:
            raise ActorError(
                "signed mode: revoke the actor's keys (stopline keys revoke NAME --root ROOTKEY)"
            )
        registry = {**self.store.actors(), **self.store.registry().actors}
        if name not in registry:
            name = _check_name(ACTOR, name)
        existing = registry.get(name)
        if existing is None:
            return None
        if role is not None and role not in existing.roles:
            role = _check_name(ROLE, role)
        now = self.clock()
        if role is None:
            actor = Actor(name, existing.roles, False)
            self.store.set_actor(actor, "revoke", {}, now)
            self.store.revoke_tokens(name, now)
        else:
            actor = Actor(name, existing.roles - {role}, existing.active)
            self.store.set_actor(actor, "revoke_role", {"role": role}, now)
        return actor

    def new_token(self, name: str) -> str | None:
        """A fresh API token for an actor the registry chain records as active; only its hash
        is stored. In signed mode the actor must hold a live certificate and sign the token's
        issue (``signer``)."""
        name = _check_name(ACTOR, name)
        if self.trust is not None:
            return self._signed_token(name)
        actor = self.store.registry().actors.get(name)
        if actor is None or not actor.active:
            return None
        token = "stl_" + secrets.token_urlsafe(32)
        self.store.add_token(name, hash_token(token), self.clock())
        return token

    def _signed_token(self, name: str) -> str | None:
        now = self.clock()
        authority = self.authority()
        assert authority is not None
        if name not in authority.actors(now):
            return None
        if self.signer is None:
            raise ActorError(
                "signed mode: sign the token's issue with the actor's key (--key PATH, "
                "STOPLINE_KEY or ssh-agent)"
            )
        token = "stl_" + secrets.token_urlsafe(32)
        body = {"kind": TOKEN, "v": 1, "actor": name, "token": hash_token(token)}
        signed = sign({**body, "at": format_time(now)}, self.signer).to_plain()
        problems = token_problems(
            authority, signed, actor=name, token_hash=hash_token(token), now=now
        )
        if problems:
            raise ActorError("; ".join(problems))
        if name not in self.store.actors():
            # the token table names an actor row; in signed mode that row holds no roles (the
            # certificates do), it only lets the token be stored
            self.store.set_actor(Actor(name, frozenset(), True), "add", {"roles": []}, now)
        self.store.add_token(name, hash_token(token), now, signed=signed)
        return token

    def authenticate(self, token: str) -> Actor | None:
        """The active actor a token was issued to, as the registry chain records both; a token
        or a role written into a table without its registry event authenticates nobody."""
        return self.authenticate_hash(hash_token(token))

    def authenticate_hash(self, token_hash: str) -> Actor | None:
        """:meth:`authenticate` for a token known by its hash (a web session keeps only that).
        In signed mode the token's issue must carry the actor's live signature."""
        name = self.store.token_actor(token_hash)
        if name is None:
            return None
        registry = self.store.registry()
        issued = registry.tokens.get(token_hash)
        if not registry.ok or issued is None or issued.revoked or issued.actor != name:
            return None
        authority = self.authority(registry)
        if authority is not None:
            now = self.clock()
            signed = next(
                (
                    d.get("signed")
                    for change, d in registry.signed
                    if change == "token_issue" and d.get("token") == token_hash
                ),
                None,
            )
            problems = token_problems(authority, signed, actor=name, token_hash=token_hash, now=now)
            return None if problems else authority.actors(now).get(name)
        actor = registry.actors.get(name)
        return actor if actor is not None and actor.active else None

    def deciding_actors(self, registry: Registry | None = None) -> dict[str, Actor]:
        """Who holds which roles now, as a command is decided: the registry chain's actors (in
        signed mode, the certified ones), never a table's rows alone. What the read views
        show as who may still approve a proposal."""
        if registry is None:
            registry = self.store.registry()
        authority = self.authority(registry)
        return dict(registry.actors) if authority is None else authority.actors(self.clock())

    def active_actor(self, name: str) -> Actor | None:
        """``name`` among :meth:`deciding_actors`, if active, as a trusted proxy header names
        it; ``None`` when the chain does not verify, as for a token. Rows written into the
        tables without their registry events name nobody."""
        registry = self.store.registry()
        actor = self.deciding_actors(registry).get(name) if registry.ok else None
        return actor if actor is not None and actor.active else None


def _check_name(kind: str, name: str) -> str:
    """The normalised name (see ``core.names``), or :class:`ActorError` with what is wrong."""
    try:
        return check_name(kind, name)
    except InvalidName as exc:
        raise ActorError(str(exc)) from exc
