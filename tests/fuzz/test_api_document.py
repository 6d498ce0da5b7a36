"""The OpenAPI document (``http/openapi.py``) says what the server takes, to the edge: at each
bound a parameter's schema names, the value just inside it is taken by the schema and by the
server, and the value just past it is refused by both (the server with 422, or 404 for an item
id no item can have). A client generated from the document then never sends what the server
refuses for its shape, and never refrains from what it takes. (Schemathesis, run from the same
document, passed with these bounds gone: a schema wider than the server only makes more of its
cases 422.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from stopline.commands.entry import Shell
from stopline.commands.fields import MAX_KEY
from stopline.commands.table import exposed
from stopline.http.api import MAX_LIMIT
from stopline.http.openapi import document

from .conftest import DemoTemplate
from .kit import asgi_client

DOC = document()
LIST = DOC["paths"]["/api/items"]["get"]


def _takes(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _parameter(operation: dict[str, Any], name: str) -> dict[str, Any]:
    [found] = [p for p in operation["parameters"] if p["name"] == name]
    return dict(found["schema"])


@pytest.fixture
def api(demo_db: DemoTemplate, tmp_path: Path, clean_env: None) -> Any:
    from stopline.server.app import create_app

    client = asgi_client(create_app(demo_db.copy(tmp_path)))
    client.headers["Authorization"] = f"Bearer {demo_db.tokens['alice']}"
    return client


LIST_EDGES = [
    # (filter, the last value taken, the first refused)
    ("limit", str(MAX_LIMIT), str(MAX_LIMIT + 1)),
    ("limit", "1", "0"),
    ("automation", "a" * 200, "a" * 201),
    ("key", "k" * 200, "k" * 201),
    ("key", "k", "k\x00"),
    ("overdue", "true", "yes"),
    ("state", "exhausted", "done"),
    ("state_class", "stop", "stopped"),
    ("sort", "newest", "latest"),
]


@pytest.mark.parametrize(("name", "inside", "past"), LIST_EDGES)
def test_each_list_filter_is_documented_to_the_edge_the_server_keeps(
    api: Any, name: str, inside: str, past: str
) -> None:
    schema = _parameter(LIST, name)
    as_sent: Any = int(inside) if name == "limit" else inside
    assert _takes(schema, as_sent), (name, inside)
    assert api.get("/api/items", params={name: inside}).status_code == 200
    refused: Any = int(past) if name == "limit" else past
    assert not _takes(schema, refused), (name, past)
    assert api.get("/api/items", params={name: past}).status_code == 422


def test_an_item_id_is_documented_as_the_server_reads_one(api: Any) -> None:
    show = DOC["paths"]["/api/items/{item}"]["get"]
    schema = _parameter(show, "item")
    longest = "a" * MAX_KEY
    assert _takes(schema, longest)
    assert api.get(f"/api/items/{longest}").status_code == 404  # a well-formed id, no such item
    for wrong in ("a" * (MAX_KEY + 1), ".hidden", "a b"):
        assert not _takes(schema, wrong), wrong
        assert api.get(f"/api/items/{wrong}").status_code in (404, 422), wrong


def test_the_idempotency_key_is_documented_as_the_server_takes_it(
    api: Any, demo_db: DemoTemplate
) -> None:
    [entry] = [e for e in exposed(Shell.HTTP) if e.name == "note"]
    assert entry.idempotent
    operation = DOC["paths"]["/api/items/{item}/note"]["post"]
    schema = _parameter(operation, "Idempotency-Key")
    item = demo_db.refs[0]
    url = f"/api/items/{item}/note"
    for good in ("k" * MAX_KEY, "~!"):
        assert _takes(schema, good)
        answer = api.post(url, json={"body": "a note"}, headers={"Idempotency-Key": good})
        assert answer.status_code == 200, answer.text
    for bad in ("k" * (MAX_KEY + 1), "two words", "tab\there"):
        assert not _takes(schema, bad), bad
        answer = api.post(url, json={"body": "a note"}, headers={"Idempotency-Key": bad})
        assert answer.status_code == 422, (bad, answer.text)


def test_a_body_is_documented_as_required_exactly_where_the_server_requires_one(
    api: Any, demo_db: DemoTemplate
) -> None:
    """An entry with a required field refuses a command with no body (422); an entry whose
    fields are all optional, or that has none, takes one (no body is no fields)."""
    item = demo_db.refs[0]
    seen = set()
    for entry in exposed(Shell.HTTP):
        operation = DOC["paths"][f"/api/items/{{item}}/{entry.name}"]["post"]
        required = any(field.required for field in entry.fields)
        assert operation["requestBody"]["required"] is required, entry.name
        answer = api.post(f"/api/items/{item}/{entry.name}")
        assert (answer.status_code == 422) is required, (entry.name, answer.text)
        seen.add((required, bool(entry.fields)))
    # each kind was tried: a required field, optional fields alone, no field at all
    assert seen == {(True, True), (False, True), (False, False)}


def test_every_operation_is_documented_as_needing_the_bearer_token_it_needs(api: Any) -> None:
    assert DOC["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    assert DOC["security"] == [{"bearer": []}]
    assert not any("security" in op for ops in DOC["paths"].values() for op in ops.values())
    del api.headers["Authorization"]
    assert api.get("/api/items").status_code == 401
    assert api.get("/api/me").status_code == 401
