"""The routes of the web inbox. Every state change is a POST with a CSRF token; commands go
through :func:`stopline.commands.entry.execute`, as the JSON API's do."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from .bulk import bulk
from .inbox import inbox, next_item
from .item import act, item_page
from .signin import home, signin, signin_page, signout
from .stuck import stuck


def routes() -> list[BaseRoute]:
    return [
        Route("/", home, methods=["GET"]),
        Route("/signin", signin_page, methods=["GET"]),
        Route("/signin", signin, methods=["POST"]),
        Route("/signout", signout, methods=["POST"]),
        Route("/inbox", inbox, methods=["GET"]),
        Route("/inbox/next", next_item, methods=["GET"]),
        Route("/inbox/bulk", bulk, methods=["POST"]),
        Route("/stuck", stuck, methods=["GET"]),
        Route("/items/{item}", item_page, methods=["GET"]),
        Route("/items/{item}/{command}", act, methods=["POST"]),
    ]
