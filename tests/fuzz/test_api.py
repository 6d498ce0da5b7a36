"""schemathesis against the HTTP API, in this process (the real Starlette app over ASGI, on a
copy of the demo database): negative data (bodies, paths and queries the OpenAPI document
says are wrong) and positive data, each request as one of the demo's people.

Property: no 5xx; every response conforms to the document (status, content type, headers,
body); and a refused request (any 4xx) writes nothing but the audit row of a refusal the
core decided (409); a request refused before the core ran (400, 413, 415, 422 and the like)
writes not even that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .conftest import PEOPLE, DemoTemplate
from .kit import asgi_client, changes, fuzz_settings, shown, snapshot, tally, wire

schemathesis = pytest.importorskip(
    "schemathesis", reason="schemathesis is not installed (dev extra)"
)

from schemathesis import GenerationMode  # noqa: E402
from schemathesis.config import SchemathesisConfig  # noqa: E402
from schemathesis.specs.openapi.checks import ignored_auth  # noqa: E402

from stopline.server.app import create_app  # noqa: E402

# As tests/server/test_http_schemathesis.py says: a schema-valid body can still be over the
# documented 64 KiB (413) or break the input limits inside free-form objects (422).
CONFIG = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "401", "403", "404", "409", "413", "422", "429"]

[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]
"""
CORE_REFUSAL = 409  # decided by the core: its one audit row


def test_schemathesis_negative_data_finds_nothing(
    demo_db: DemoTemplate, tmp_path: Path, clean_env: None, record_property: Any
) -> None:
    url = demo_db.copy(tmp_path)
    app = create_app(url)
    schema = schemathesis.openapi.from_asgi(
        "/openapi.json", app, config=SchemathesisConfig.from_str(CONFIG)
    )
    items = sorted({ref for ref in demo_db.refs if ref.startswith("itm_")})

    def requests(mode: GenerationMode) -> st.SearchStrategy[Any]:
        # the token is fixed, never a part negative data leaves out: schemathesis then takes it
        # for a generated one, so its own probe of authentication is replaced by ours below
        return st.one_of(
            [
                schema.as_strategy(
                    mode,
                    headers={"Authorization": f"Bearer {demo_db.tokens[person]}"},
                    path_parameters={"item": item},
                )
                for person in PEOPLE
                for item in items
            ]
        )

    with tally("http api: schemathesis (ASGI)", record_property) as t:

        @fuzz_settings(weight=4)
        @given(case=requests(GenerationMode.NEGATIVE) | requests(GenerationMode.POSITIVE))
        def case(case: Any) -> None:
            t.cases += 1
            before = snapshot(url)
            response = case.call()
            what = f"{case.method} {case.formatted_path} {shown(case.body, 200)}"
            if response.status_code >= 500:
                t.crash(f"{what}: {response.status_code} {response.text[:300]}")
            try:
                case.validate_response(response, excluded_checks=[ignored_auth])
            except (Exception, BaseExceptionGroup) as exc:  # schemathesis: a FailureGroup
                t.crash(f"{what}: {response.status_code}: {str(exc)[:600]}")
            if response.status_code < 400:
                t.accepted += 1
                accepted = snapshot(url)
                probe = case.call(headers={"Authorization": "Bearer not-a-token"})
                if probe.status_code != 401:
                    t.crash(f"{what}: {probe.status_code} with a wrong token, not 401")
                if changes(accepted, snapshot(url), audit=False):
                    t.wrote(f"{what}: the same request with a wrong token wrote")
                return
            t.refused += 1
            audit = response.status_code == CORE_REFUSAL
            changed = changes(before, snapshot(url), audit=audit)
            if changed:
                t.wrote(f"{what}: {response.status_code}, and {changed}")

        case()


def test_the_api_refuses_hostile_json_text_in_one_answer(
    demo_db: DemoTemplate, tmp_path: Path, clean_env: None, record_property: Any
) -> None:
    """Raw bodies schemathesis does not write (NaN, 1e999, 600-deep, a lone surrogate, bytes
    that are not UTF-8) on every command route: 4xx with a JSON error, nothing written."""
    from .kit import json_texts

    url = demo_db.copy(tmp_path)
    client = asgi_client(create_app(url))
    client.headers["Authorization"] = f"Bearer {demo_db.tokens['carol']}"
    routes = [
        r["path"] if isinstance(r, dict) else r
        for r in json.loads(client.get("/openapi.json").text)["paths"]
        if "{item}" in r
    ]
    items = sorted({ref for ref in demo_db.refs if ref.startswith("itm_")})
    fields = st.sampled_from(["params", "reason", "input", "proposal", "attempts", "artifacts"])
    with tally("http api: hostile JSON text", record_property) as t:

        @fuzz_settings(weight=3)
        @given(
            route=st.sampled_from(routes),
            item=st.sampled_from(items),
            field=fields,
            text=json_texts(),
            raw=st.booleans(),
        )
        def case(route: str, item: str, field: str, text: str, raw: bool) -> None:
            t.cases += 1
            body = text if raw else '{"' + field + '": ' + text + "}"
            data = wire(body)
            before = snapshot(url)
            path = route.replace("{item}", item)
            response = client.post(path, content=data, headers={"Content-Type": "application/json"})
            what = f"POST {path} {shown(body, 200)}"
            if response.status_code >= 500:
                t.crash(f"{what}: {response.status_code} {response.text[:300]}")
            if response.status_code < 400:
                t.accepted += 1
                return
            if response.headers.get("content-type", "").split(";")[0] != "application/json":
                t.crash(f"{what}: {response.status_code} without a JSON error")
            t.refused += 1
            changed = changes(before, snapshot(url), audit=response.status_code == CORE_REFUSAL)
            if changed:
                t.wrote(f"{what}: {response.status_code}, and {changed}")

        case()
