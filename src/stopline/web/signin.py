"""Signing in (a token, or a trusted proxy header) and out."""

from __future__ import annotations

import logging

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from .page import form_text, malformed, read_form, visit
from .session import Session, csrf_ok, end, signed_in

log = logging.getLogger("stopline.web")


async def home(request: Request) -> Response:
    return RedirectResponse("/inbox", status_code=303)


async def signin_page(request: Request) -> Response:
    v = await visit(request)
    return v.render("signin.html", error=None)


async def signin(request: Request) -> Response:
    v = await visit(request)
    form, problem = await read_form(request)
    if problem is not None:
        return malformed(v, problem)
    if not csrf_ok(v.s, v.session, form_text(form, "csrf")):
        return v.message(
            403, "Form expired", "The form was not sent by this page. Nothing was done."
        )
    token = form_text(form, "token").strip()
    actor = await run_in_threadpool(v.s.controller.authenticate, token) if token else None
    if actor is None:
        return v.render("signin.html", 401, error="That token is not valid (unknown or revoked).")
    v.session = signed_in(token)
    return v.redirect("/inbox")


async def signout(request: Request) -> Response:
    v = await visit(request)
    form, problem = await read_form(request)
    if problem is not None:
        return malformed(v, problem)
    if not csrf_ok(v.s, v.session, form_text(form, "csrf")):
        return v.message(
            403, "Form expired", "The form was not sent by this page. Nothing was done."
        )
    if v.session.token_hash:
        try:  # ended in the store: a copy of the cookie is signed out in every process too
            await run_in_threadpool(end, v.s, v.session)
        except Exception:
            log.exception("a sign-out could not be recorded")
            return v.message(
                503,
                "Not signed out",
                "The sign-out could not be recorded, so this session still works. Try again.",
            )
    v.session = Session.new()
    return v.redirect("/signin")
