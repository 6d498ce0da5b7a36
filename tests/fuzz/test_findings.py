"""Each crash the fuzzers found, as a plain test (each failed before its fix):

1. a CLI argument that is not valid UTF-8 (or holds NUL) was an internal error with a
   traceback (``show``, ``history``, ``--actor``, ``items --automation``): now exit 2, one
   line naming the argument, nothing written;
2. the command layer sent such text to the store: an item reference is no item, an actor that
   is no valid text is kept out of the refusal's audit row;
3. a lone surrogate in a text field (a reason, a digest) was refused by the core after the
   fact (exit 3, HTTP 409, an audit row): now the table's check refuses it (exit 2, HTTP 422);
4. ``perform()`` without an actor raised ``ValueError``;
5. a core command with values of the wrong types (``Reject(reason=None)``,
   ``Close(integrity="0")``) raised ``AttributeError`` inside a rule, and one holding a value
   700 deep raised ``RecursionError`` before the core saw it;
6. a discovery listing an integer of 5,000 digits (or an object whose ``str()`` raises) killed
   the scheduler of ``stopline run``;
7. ``GET /api/items?overdue=`` answered 200 where the OpenAPI document allowed no empty
   value (the filter was documented, not the behaviour: an empty filter is no filter);
8. ``GET /api/items?stat=exhausted`` (a mistyped filter) listed every item: an unknown filter
   is now 422;
9. a form whose CSRF field (or a session cookie) held a character beyond ASCII was a 500: the
   comparison of MACs refused the text; now it is a form that was not sent by the page (403).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from stopline.commands.fields import check_value
from stopline.commands.perform import perform
from stopline.commands.table import COMMANDS
from stopline.controller import Controller
from stopline.core.commands import Close, Reconcile, Reject
from stopline.core.decision import Outcome
from stopline.core.reasons import Reason
from stopline.http.openapi import document
from stopline.runtime.automation import App, Automation
from stopline.runtime.outcomes import Evidence, NeedsEyes
from stopline.runtime.scheduler import Scheduler
from stopline.store import open_store
from strategies import nest

from .conftest import DemoTemplate
from .kit import asgi_client, changes, snapshot
from .test_cli import run_main

ITEM = "service-health/checkout-api"


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["show", "\udcff"], "argument 2"),
        (["history", "a\udcffb"], "argument 2"),
        (["items", "--automation", "\udcff"], "--automation"),
        (["close", ITEM, "--actor", "\udcff", "--reason", "x"], "--actor"),
        (["close", ITEM, "--actor", "carol", "--reason=\udcfe"], "--reason"),
        (["close", ITEM, "--actor", "carol", "--reason", "a\x00b"], "--reason"),
    ],
)
def test_1_an_argument_that_is_not_text_is_exit_2_in_one_line(
    argv: list[str], named: str, demo_db: DemoTemplate, tmp_path: Path, clean_env: None
) -> None:
    url = demo_db.copy(tmp_path)
    before = snapshot(url)
    code, _, stderr = run_main([*argv, "--db", url])
    assert code == 2, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("stopline: "), stderr
    assert named in stderr and "Traceback" not in stderr
    assert changes(before, snapshot(url), audit=False) is None


def test_2_the_controller_never_sends_what_is_not_text_to_the_store(
    demo_db: DemoTemplate, tmp_path: Path, clean_env: None
) -> None:
    url = demo_db.copy(tmp_path)
    before = snapshot(url)
    store = open_store(url)
    try:
        controller = Controller(store, trust=None)
        assert controller.item("itm_\udcff") is None
        assert controller.item("service-health/a\x00") is None
        for ref, actor, key in [
            ("itm_\ud800", "carol", None),
            (ITEM, "car\udcffol", None),
            (ITEM, "carol", "key-\udcff"),
        ]:
            decision = controller.run(ref, Close(actor=actor, reason="r"), idempotency_key=key)
            assert decision.outcome is Outcome.REFUSED and decision.reasons, (ref, actor, key)
    finally:
        store.close()
    assert changes(before, snapshot(url), audit=True) is None


def test_3_a_lone_surrogate_in_a_text_field_is_a_problem_of_the_field() -> None:
    reason = COMMANDS["close"].field("reason")
    assert reason is not None
    problems = check_value(reason, "bad \ud800 text")
    assert problems and "not valid Unicode" in problems[0]
    assert check_value(reason, "fine text \u00e9\U0001f600") == []


def test_3_the_api_answers_a_lone_surrogate_in_a_reason_422_and_writes_nothing(
    demo_db: DemoTemplate, tmp_path: Path, clean_env: None
) -> None:
    from stopline.server.app import create_app

    url = demo_db.copy(tmp_path)
    client = asgi_client(create_app(url))
    store = open_store(url)
    item = Controller(store, trust=None).item(ITEM)
    store.close()
    assert item is not None
    before = snapshot(url)
    response = client.post(
        f"/api/items/{item.id}/close",
        content=b'{"reason": "\\ud800"}',
        headers={"Authorization": f"Bearer {demo_db.tokens['carol']}"},
    )
    assert response.status_code == 422, response.text
    assert "not valid Unicode" in response.json()["message"]
    assert changes(before, snapshot(url), audit=False) is None


def test_4_perform_without_an_actor_is_a_problem(
    demo_db: DemoTemplate, tmp_path: Path, clean_env: None
) -> None:
    store = open_store(demo_db.copy(tmp_path))
    try:
        done = perform(
            Controller(store, trust=None), COMMANDS["close"], ITEM, actor="", fields={"reason": "r"}
        )
    finally:
        store.close()
    assert done.decision is None and "needs an actor" in done.problems[0]


@pytest.mark.parametrize(
    "command",
    [
        Reconcile(actor="alice", key="a", remote_id=nest(1, 700)),  # a RecursionError before
        Reject(actor="alice", reason=None),  # type: ignore[arg-type]
        Close(actor="carol", reason="r", integrity="0"),  # type: ignore[arg-type]
        Close(actor="carol", reason=["r"]),  # type: ignore[arg-type]
    ],
)
def test_5_a_core_command_of_the_wrong_types_is_refused_invalid_input(
    command: Any, demo_db: DemoTemplate, tmp_path: Path, clean_env: None
) -> None:
    url = demo_db.copy(tmp_path)
    before = snapshot(url)
    store = open_store(url)
    try:
        decision = Controller(store, trust=None).run(ITEM, command)
    finally:
        store.close()
    assert decision.outcome is Outcome.REFUSED
    assert decision.reasons == (Reason.INVALID_INPUT,)
    assert changes(before, snapshot(url), audit=True) is None


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_6_a_discovered_key_with_no_text_is_rejected_and_discovery_goes_on(
    tmp_path: Path,
) -> None:
    found: list[Any] = [10**5000, Unprintable(), "good-1"]
    app = App(
        [
            Automation(
                name="keys",
                discover=lambda ctx: found,
                observe=lambda ctx: Evidence({}),
                propose=lambda ctx: NeedsEyes("x"),
            )
        ]
    )
    store = open_store(f"sqlite:///{tmp_path / 'keys.db'}")
    try:
        at = datetime(2026, 5, 1, tzinfo=UTC)
        fired = Scheduler(store, app, clock=lambda: at).tick(force=True)
        assert [(f.new, f.rejected) for f in fired] == [(1, 2)]
        assert [i.key for i in store.list_items()] == ["good-1"]
    finally:
        store.close()


def test_7_an_empty_list_filter_is_documented_as_no_filter() -> None:
    parameters = document()["paths"]["/api/items"]["get"]["parameters"]
    for p in parameters:
        schema = p["schema"]
        takes_empty = schema.get("maxLength") is not None or {
            "type": "string",
            "maxLength": 0,
        } in schema.get("anyOf", [])
        assert takes_empty, p["name"]
        assert "empty: no filter" in p["description"]


def test_8_an_unknown_filter_is_422(demo_db: DemoTemplate, tmp_path: Path, clean_env: None) -> None:
    from stopline.server.app import create_app

    client = asgi_client(create_app(demo_db.copy(tmp_path)))
    client.headers["Authorization"] = f"Bearer {demo_db.tokens['dana']}"
    response = client.get("/api/items", params={"stat": "exhausted"})
    assert response.status_code == 422, response.text
    assert "unknown filter 'stat'" in response.json()["problems"][0]
    assert client.get("/api/items", params={"state": "exhausted", "overdue": ""}).status_code == 200


def test_9_a_csrf_token_beyond_ascii_is_a_refused_form_not_a_500(
    demo_db: DemoTemplate, tmp_path: Path, clean_env: None
) -> None:
    from itsdangerous import Signer

    from stopline.server.app import create_app
    from stopline.web.session import Session, csrf_ok

    from .test_web import signed_in

    url = demo_db.copy(tmp_path)
    client = asgi_client(create_app(url))
    signed_in(client, demo_db.tokens["alice"])
    item = demo_db.refs[0]
    before = snapshot(url)
    response = client.post(
        f"/items/{item}/close",
        content=b"csrf=%C2%80&reason=r",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 403, response.text[:300]
    assert changes(before, snapshot(url), audit=False) is None
    shared: Any = SimpleNamespace(csrf=Signer("s" * 32, salt="stopline:csrf"))
    for token in ("\x80", "\u00e9", "\ud800", "\x00"):
        assert csrf_ok(shared, Session("sid", None), token) is False
