"""schemathesis against /openapi.json of a live server: no server error, and every response
(status, content type, headers, body) conforms to the document."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from budget import examples

from .conftest import Demo
from .httphelp import Server

CONFIG = """
[checks.positive_data_acceptance]
# A schema-valid body can still be larger than the server's documented 64 KiB limit (413), or
# break the input limits the schema does not spell out inside free-form objects, such as an
# integer beyond ±(2**53 - 1), which the canonical form (RFC 8785) cannot hold (422).
expected-statuses = ["2xx", "401", "403", "404", "409", "413", "422", "429"]

[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]

[dictionaries.items]
values = {items}

[parameters]
"path.item" = {{ dictionary = "items", probability = 0.5 }}
"""


def test_schemathesis_finds_nothing(demo: Demo, live: Server, tmp_path: Path) -> None:
    pytest.importorskip("schemathesis", reason="schemathesis is not installed (dev extra)")
    with live.client(demo.tokens["alice"]) as alice:
        ids = [i["id"] for i in alice.get("/api/items").json()["items"]]
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG.format(items=json.dumps(ids)))
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(config),
        "run",
        f"{live.base}/openapi.json",
        "--header",
        f"Authorization: Bearer {demo.tokens['alice']}",
        "--checks",
        "all",
        "--max-examples",
        str(examples(25, least=5)),  # 25 in CI (STOPLINE_SLOW=1), 6 in a plain run
        "--seed",
        "20261129",
        "--workers",
        "1",
        "--generation-database",
        "none",
        "--no-color",
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=540, cwd=tmp_path)
    report = run.stdout[-6000:] + run.stderr[-2000:]
    assert run.returncode == 0, report
    assert " failures" not in report.splitlines()[-1], report
    assert "passed" in report and "5xx" not in report
