"""What every page handler shares: the templates, and who is visiting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import jinja2
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ..core.records import Actor
from ..server.state import Shared, shared
from .session import Session, csrf_ok, csrf_token, identity, load, save

ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("stopline.web", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


@dataclass
class Visit:
    request: Request
    s: Shared
    session: Session
    actor: Actor | None
    via: str
    may_command: bool

    def render(self, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        html = ENV.get_template(template).render(
            csrf=csrf_token(self.s, self.session),
            actor=self.actor,
            via=self.via,
            read_only=self.s.settings.read_only,
            proxy_header=self.s.settings.trust_proxy_header,
            mode=self.s.mode,
            speaks_as=self.s.controller.via,
            **ctx,
        )
        response = HTMLResponse(html, status_code=status)
        save(response, self.request, self.s, self.session)
        return response

    def redirect(self, url: str) -> Response:
        response = RedirectResponse(url, status_code=303)
        save(response, self.request, self.s, self.session)
        return response

    def message(self, status: int, title: str, text: str) -> HTMLResponse:
        return self.render("message.html", status, title=title, text=text)


async def visit(request: Request) -> Visit:
    s = shared(request)

    def who() -> tuple[Session, Actor | None, str, bool]:
        session = load(request, s)  # reads the store: a session signed out is a new one
        actor, via = identity(request, s, session)
        return session, actor, via, actor is not None and s.may_command(actor)

    session, actor, via, may = await run_in_threadpool(who)
    return Visit(request, s, session, actor, via, may)


FORM = "application/x-www-form-urlencoded"
MAX_FIELDS = 1000


async def read_form(request: Request) -> tuple[FormData, str | None]:
    """The posted form, read the one way a page sends it: ``FORM``, percent-encoded ASCII whose
    every name and value is UTF-8; else an empty form and the problem. Nothing is guessed: bytes
    that are not UTF-8 are never replaced (or read as Latin-1) and then written as a reason."""
    raw = await request.body()
    if not raw:
        return FormData(), None
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind != FORM or not raw.isascii():
        return FormData(), f"a form is sent as {FORM} (percent-encoded UTF-8)"
    try:
        pairs: list[tuple[str, str | UploadFile]] = []
        pairs += parse_qsl(
            raw.decode("ascii"),
            keep_blank_values=True,
            encoding="utf-8",
            errors="strict",
            max_num_fields=MAX_FIELDS,
        )
    except UnicodeDecodeError:
        return FormData(), "the form holds text that is not UTF-8"
    except ValueError:
        return FormData(), f"the form has more than {MAX_FIELDS} fields"
    return FormData(pairs), None


def malformed(v: Visit, problem: str) -> HTMLResponse:
    return v.message(422, "Malformed form", f"{problem}. Nothing was done.")


def form_text(form: FormData, name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""


def may_post(v: Visit, form: FormData) -> Response | None:
    """The answer to a posted form that may not act (no valid CSRF token, nobody signed in, a
    read-only server, a visitor who may only read), or ``None``: go on."""
    if not csrf_ok(v.s, v.session, form_text(form, "csrf")):
        return v.message(
            403,
            "Form expired",
            "The form was not sent by this page (no valid CSRF token). Nothing was done.",
        )
    if v.actor is None:
        return v.message(401, "Sign in first", "You are not signed in. Nothing was done.")
    if v.s.settings.read_only:
        return v.message(403, "Read-only", "This server is read-only. Nothing was done.")
    if not v.may_command:
        return v.message(
            403, "Not allowed", f"{v.actor.name} may read but not act. Nothing was done."
        )
    return None
