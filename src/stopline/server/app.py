"""The ASGI application: the JSON API, the web inbox, ``/metrics`` and ``/openapi.json``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..http import metrics
from ..http.access_log import AccessLog
from ..http.api import error
from ..http.api import routes as api_routes
from ..http.openapi import document
from ..runtime.notifier import DEFAULT_BASE_URL, NotifierFailed, NotifierThread
from ..store import open_store
from ..web.routes import routes as web_routes
from .guard import Guard
from .settings import Settings
from .state import Shared, shared

log = logging.getLogger("stopline.notify")


async def openapi_endpoint(request: Request) -> Response:
    return JSONResponse(document())


async def metrics_endpoint(request: Request) -> Response:
    s = shared(request)
    text = await run_in_threadpool(metrics.render, s.store.insights, s.now())
    return PlainTextResponse(text, media_type=metrics.CONTENT_TYPE)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if request.url.path.startswith("/api/"):
        code = "not_found" if exc.status_code == 404 else "http_error"
        response = error(exc.status_code, code, str(exc.detail))
        response.headers.update(headers)
        return response
    return PlainTextResponse(str(exc.detail), status_code=exc.status_code, headers=headers)


async def server_error(request: Request, exc: Exception) -> Response:
    if request.url.path.startswith("/api/"):
        return error(500, "internal_error", f"{type(exc).__name__}; nothing is assumed written")
    return HTMLResponse("<h1>Internal error</h1>", status_code=500)


def create_app(
    url: str,
    *,
    read_only: bool = False,
    trust_proxy_header: str | None = None,
    secret: str | None = None,
    settings: Settings | None = None,
) -> Starlette:
    """The application for the database at ``url``. Keyword options override ``settings``."""
    base = settings or Settings()
    changes: dict[str, Any] = {}
    if read_only:
        changes["read_only"] = True
    if trust_proxy_header:
        changes["trust_proxy_header"] = trust_proxy_header
    if secret:
        changes["secret"] = secret
    options = replace(base, **changes)
    notify = options.notify_settings(DEFAULT_BASE_URL)
    store = open_store(url, migrate=False)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        notifier = None
        if notify is not None:  # the runtime's notifier, on a store of its own
            notifier = NotifierThread(url, notify)
            await run_in_threadpool(notifier.start)
        try:
            yield
        finally:
            try:
                if notifier is not None:
                    await run_in_threadpool(notifier.stop)
            except NotifierFailed as exc:
                log.error("%s", exc)  # logged with its traceback when it happened
            finally:
                store.close()

    static = resources.files("stopline.web").joinpath("static")
    app = Starlette(
        routes=[
            Route("/openapi.json", openapi_endpoint, methods=["GET"]),
            Route("/metrics", metrics_endpoint, methods=["GET"]),
            *api_routes(),
            *web_routes(),
            Mount("/static", StaticFiles(directory=str(static)), name="static"),
        ],
        middleware=[
            *([Middleware(AccessLog)] if options.log_requests else []),
            Middleware(Guard, limit=options.max_body),
        ],
        exception_handlers={HTTPException: http_error, Exception: server_error},
        lifespan=lifespan,
    )
    app.state.stopline = Shared(store, options)
    return app
