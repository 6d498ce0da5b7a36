"""Sessions of the web inbox: a signed cookie, a CSRF token bound to it, and who is signed in.

The cookie (HttpOnly, SameSite=Strict) holds a random session id and, once signed in, the
hash of the token used (never the token). Every request re-checks that hash against the
registry chain, as the API checks a token, so a revoked token or actor ends its sessions at
once. With ``STOPLINE_TRUST_PROXY_HEADER`` set, a request carrying that header is the actor
it names (as the chain records it).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from itsdangerous import BadSignature
from starlette.requests import Request
from starlette.responses import Response

from ..core.records import Actor
from ..registrar import hash_token
from ..server.state import Shared

COOKIE = "stopline_session"
MAX_AGE = 12 * 3600
MAX_COOKIE = 4096  # a longer cookie is refused unread


@dataclass
class Session:
    sid: str
    token_hash: str | None = None
    fresh: bool = False  # must be sent to the browser

    @classmethod
    def new(cls, token_hash: str | None = None) -> Session:
        return cls(secrets.token_urlsafe(24), token_hash, True)


def load(request: Request, s: Shared) -> Session:
    """The session the cookie holds; a missing, tampered, expired or malformed one is a new
    session (signed out)."""
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
    return Session(doc["sid"], th if isinstance(th, str) else None)


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
