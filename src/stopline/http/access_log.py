"""One log line per request (logger ``stopline.http.access``, level INFO): method, path,
status and duration; in ``--log-format json`` each is a field of its own. The query string is
left out (it may carry search text), and so is every header (tokens, cookies)."""

from __future__ import annotations

import logging
import time
from typing import Any

from ..logs import printable

log = logging.getLogger("stopline.http.access")


class AccessLog:
    """Pure ASGI middleware: it sees the status the application sent, streaming or not."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status = {"code": 500}

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                status["code"] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            took = round((time.monotonic() - started) * 1000, 3)
            client = scope.get("client")
            log.info(
                "%s %s %s %.1fms",
                scope["method"],
                printable(scope["path"]),
                status["code"],
                took,
                extra={
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status["code"],
                    "duration_ms": took,
                    "client": client[0] if client else None,
                },
            )
