"""``stopline serve --log-format json`` logs one line per request, without query strings or
headers, each with the context keys every line carries."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx

from proc import wait_for

from .conftest import Demo
from .httphelp import Server


def test_serve_logs_each_request_as_json(demo: Demo, start_server: Callable[..., Server]) -> None:
    server = start_server(demo.url, STOPLINE_LOG_FORMAT="json")
    secret_query = "q=private-search-text"
    assert httpx.get(f"{server.base}/metrics").status_code == 200
    assert httpx.get(f"{server.base}/api/items/itm_nope?{secret_query}").status_code in (401, 404)

    def lines() -> list[dict[str, object]]:
        text = server.log.read_text()
        return [json.loads(x) for x in text.splitlines() if x.startswith("{")]

    wait_for(
        lambda: any(x.get("path") == "/api/items/itm_nope" for x in lines()), 30, "request lines"
    )
    access = [x for x in lines() if x["logger"] == "stopline.http.access"]
    metrics = next(x for x in access if x["path"] == "/metrics")
    assert metrics["method"] == "GET" and metrics["status"] == 200
    assert isinstance(metrics["duration_ms"], float)
    for line in access:
        assert {"item", "automation", "state", "worker", "decision"} <= set(line)
    assert "private-search-text" not in server.log.read_text()
