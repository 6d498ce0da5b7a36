"""Sessions of the web inbox: a signed cookie, a CSRF token bound to it, and who is signed in.

The cookie (HttpOnly, SameSite=Strict) holds a random session id and, once signed in, the
hash of the token used (never the token). Every request re-checks that hash against the
registry chain, as the API checks a token, so a revoked token or actor ends its sessions at
once. Signing out records the session as ended in the store (a hash of its id), and every
request of a signed-in session asks the store, so a copy of the cookie is signed out in every
server process on the database, before and after a restart. With
``STOPLINE_TRUST_PROXY_HEADER`` set, a request carrying that header is the actor it names (as
the chain records it).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from itsdangerous import BadSignature
from starlette.requests import Request
from starlette.responses import Response

from ..core.records import Actor
from ..registrar import hash_token
from ..server.state import Shared

COOKIE = "stopline_session"
MAX_AGE = 12 * 3600
MAX_COOKIE = 4096  # a longer cookie is refused unread
# How long a sign-out is kept: as long as the cookie can be valid, and an hour more for server
# clocks that differ (a row past it is dropped by a later sign-out).
ENDED_FOR = timedelta(seconds=MAX_AGE + 3600)


@dataclass
class Session:
    sid: str
    token_hash: str | None = None
    fresh: bool = False  # must be sent to the browser

    @classmethod
    def new(cls, token_hash: str | None = None) -> Session:
        return cls(secrets.token_urlsafe(24), token_hash, True)


def load(request: Request, s: Shared) -> Session:
    """The session the cookie holds; a missing, tampered, expired, malformed or signed-out one
    is a new session (signed out). A signed-in session costs one read of the store (whether it
    was signed out); a store that cannot be read raises: nobody is signed in."""
    raw = request.cookies.get(COOKIE)
    if not raw or len(raw) > MAX_COOKIE or not raw.isascii():  # a signed cookie is ASCII
        return Session.new()
    try:
        doc = s.sessions.loads(raw, max_age=MAX_AGE)
    except BadSignature:  # tampered, signed with another secret, expired, or from the future
        return Session.new()
    if not isinstance(doc, dict) or not isinstance(doc.get("sid"), str):
        return Session.new()
    th = doc.get("th")
    session = Session(doc["sid"], th if isinstance(th, str) else None)
    if session.token_hash and s.store.signouts.ended(_key(session)):
        return Session.new()  # signed out, in this process or another, before a restart or not
    return session


def end(s: Shared, session: Session) -> None:
    """Record ``session`` as signed out in the store, for every server process (a store that
    cannot be written raises: the session is not ended, and nobody may be told it is)."""
    now = s.now()
    s.store.signouts.end(_key(session), now + ENDED_FOR, now)


def _key(session: Session) -> str:
    """What the store keeps of a session: the hash of its id, never the id."""
    return hash_token(session.sid)


def signed_in(token: str) -> Session:
    """A new session (a new id: no fixation) for the holder of ``token``."""
    return Session.new(hash_token(token))


def save(response: Response, request: Request, s: Shared, session: Session) -> None:
    if not session.fresh:
        return
    value = s.sessions.dumps({"sid": session.sid, "th": session.token_hash})
    response.set_cookie(
        COOKIE,
        value,
        max_age=MAX_AGE,
        path="/",
        httponly=True,
        samesite="strict",
        secure=s.settings.cookie_secure or request.url.scheme == "https",
    )


def csrf_token(s: Shared, session: Session) -> str:
    return s.csrf.get_signature(session.sid).decode("ascii")


def csrf_ok(s: Shared, session: Session, value: str | None) -> bool:
    """The form's token is this session's (a fresh session has sent none yet)."""
    if not value or not value.isascii():  # a signature is ASCII; other text is no token
        return False
    return not session.fresh and s.csrf.verify_signature(session.sid, value)


def proxy_actor(request: Request, s: Shared) -> Actor | None:
    header = s.settings.trust_proxy_header
    if not header:
        return None
    names = request.headers.getlist(header)
    if len(names) != 1 or not names[0]:
        return None  # sent twice (a proxy that adds its header to the client's): nobody
    name = names[0]
    # the registry chain's actors (in signed mode the certified ones), never the tables'
    return s.controller.active_actor(name.strip())


def identity(request: Request, s: Shared, session: Session) -> tuple[Actor | None, str]:
    """The signed-in actor and how (``proxy`` or ``token``), or ``(None, "")``. A session
    keeps its token's hash, checked on every request as the API checks a token: against the
    registry chain, so a revocation ends the session even if the tables are edited back."""
    by_proxy = proxy_actor(request, s)
    if by_proxy is not None:
        return by_proxy, "proxy"
    if session.token_hash:
        signed_in = s.controller.authenticate_hash(session.token_hash)
        if signed_in is not None:
            return signed_in, "token"
    return None, ""
