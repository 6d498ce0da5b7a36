"""``stopline serve``: run the application with uvicorn, after two refusals.

It refuses (exit 2) to listen beyond loopback unless people can be told apart there: a session
secret (``STOPLINE_SECRET``) or a trusted proxy identity header
(``STOPLINE_TRUST_PROXY_HEADER``) is configured (API calls always need a bearer token). And it
refuses (exit 2) a database whose schema this stopline does not know.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys

from ..store import StoreError, open_store
from ..trust.authority import Trust, TrustError
from .delegation import DelegationError, server_delegation
from .settings import Settings, SettingsError

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _fail(message: str) -> int:
    print(f"stopline serve: {message}", file=sys.stderr)
    return EXIT_USAGE


def _check_delegation(url: str) -> None:
    """Signed mode: a server key that is set must be certified to speak for people."""
    trust = Trust.from_env()
    store = open_store(url, migrate=False, check=False)
    try:
        server_delegation(store, trust)
    finally:
        store.close()


def serve(args: argparse.Namespace, url: str) -> int:
    import uvicorn

    from .app import create_app

    host, port = str(args.host), int(args.port)
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        return _fail(str(exc))
    if not is_loopback(host) and not settings.authenticated_beyond_loopback:
        return _fail(
            f"refusing to listen on {host}: beyond loopback, set STOPLINE_SECRET (a long random "
            "session secret) or STOPLINE_TRUST_PROXY_HEADER (a header your proxy sets)"
        )
    try:
        settings.notify_settings(f"http://{host}:{port}")  # refused here, not in the thread
    except SettingsError as exc:
        return _fail(str(exc))
    try:
        store = open_store(url, migrate=False, check=False)
        try:
            store.check_schema()
        finally:
            store.close()
    except StoreError as exc:
        return _fail(f"refusing to start: {exc}")
    try:
        _check_delegation(url)
    except (DelegationError, TrustError) as exc:
        return _fail(str(exc))
    if settings.base_url is None:
        settings = Settings(**{**settings.__dict__, "base_url": f"http://{host}:{port}"})
    app = create_app(url, settings=settings)
    level = os.environ.get("STOPLINE_LOG", "warning").lower()
    if "STOPLINE_LOG" not in os.environ:  # requests and deliveries are logged by default
        for name in ("stopline.http.access", "stopline.notify"):
            logging.getLogger(name).setLevel(logging.INFO)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=level,
        log_config=None,  # uvicorn's lines go through stopline's handler (text or JSON)
        access_log=False,  # stopline.http.access logs each request
        server_header=False,
        proxy_headers=False,
        lifespan="on",
    )
    print(
        f"stopline serve: http://{host}:{port}/inbox (API at /api/, /openapi.json)",
        file=sys.stderr,
        flush=True,
    )
    try:
        uvicorn.Server(config).run()
    except SystemExit as exc:  # uvicorn exits on a port it cannot bind
        logging.getLogger("stopline").error("server stopped: %s", exc)
        return EXIT_ERROR
    return EXIT_OK
