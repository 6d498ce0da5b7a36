"""The CLI parser, the OpenAPI document, the HTTP routes and the web forms are generated from the
command table: every entry a shell exposes appears there with exactly its fields, and nothing
appears that is not in the table."""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import replace
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from starlette.datastructures import FormData
from starlette.routing import Route

from core.helpers import Harness, policy
from stopline.cli.item_commands import body_of
from stopline.cli.main import build_parser
from stopline.commands.entry import Entry, Shell, validate
from stopline.commands.hints import next_commands
from stopline.commands.table import COMMANDS, exposed
from stopline.core.policy import PUBLISH, DeliveryPolicy
from stopline.core.records import Actor, Item
from stopline.core.states import State
from stopline.http.api import routes
from stopline.http.openapi import document
from stopline.web.forms import ActionForm, action_forms
from stopline.web.item import form_values
from stopline.web.page import ENV

S = State
ADMIN = {
    "demo",
    "run",
    "items",
    "show",
    "history",
    "actors",
    "verify",
    "migrate",
    "serve",
    "mcp",
    "check",
    "completion",
    "keys",
    "workers",
    "checkpoint",
}
COMMON = {"-h", "--help", "--db", "--json"}
CLI = exposed(Shell.CLI)
HTTP = exposed(Shell.HTTP)
WEB = exposed(Shell.WEB)


# --- the CLI ----------------------------------------------------------------------------------


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    [action] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def expected_flags(entry: Entry) -> set[str]:
    flags = COMMON | {f.cli_flag for f in entry.fields}
    flags |= {"--idempotency-key"} if entry.idempotent else set()
    flags |= {"--actor", "--key"} if entry.takes_actor else set()  # --key: signed mode
    author = {"--author-kind", "--author-name", "--author-family"}
    flags |= author if entry.takes_actor else set()
    flags |= {"--app"} if entry.runner.needs_target else set()
    return flags


def test_the_cli_has_one_subcommand_per_entry_and_nothing_else() -> None:
    """The item subcommands are exactly the CLI entries; the admin commands stay as they were."""
    assert set(subcommands()) == ADMIN | {e.name for e in CLI}


@pytest.mark.parametrize("entry", CLI, ids=lambda e: e.name)
def test_a_cli_subcommand_has_exactly_its_entrys_fields(entry: Entry) -> None:
    """Flags, required flags, choices and help of a subcommand come from its table entry."""
    sub = subcommands()[entry.name]
    options = [a for a in sub._actions if a.option_strings]
    assert {s for a in options for s in a.option_strings} == expected_flags(entry)
    assert [a.dest for a in sub._actions if not a.option_strings] == ["item"]
    required = {a.option_strings[0] for a in options if a.required}
    assert required == {f.cli_flag for f in entry.fields if f.required} | (
        {"--actor"} if entry.takes_actor else set()
    )
    assert sub.description == entry.help
    text = " ".join(sub.format_help().split())
    for field in entry.fields:
        assert " ".join(field.help.split()) in text
        if field.limits.choices:
            [action] = [a for a in options if field.cli_flag in a.option_strings]
            assert list(action.choices or ()) == list(field.limits.choices)


def test_cli_flags_become_the_same_body_as_json() -> None:
    """Parsed flags make the body a JSON client would send, checked by the same validate()."""
    args = build_parser().parse_args(
        ["revise", "i", "--actor", "a", "--reason", "r", "--artifact", "x", "--artifact", "y"]
    )
    body, problems = body_of(COMMANDS["revise"], args)
    assert (body, problems) == ({"reason": "r", "artifacts": ["x", "y"]}, [])
    args = build_parser().parse_args(["edit", "i", "--actor", "a", "--params", "[1]"])
    body, problems = body_of(COMMANDS["edit"], args)
    assert validate(COMMANDS["edit"], body)[1] == ["params must be a JSON object"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["reject", "i", "--actor", "a", "--reason", "r"], {"reason": "r"}),
        (
            ["reject", "i", "--actor", "a", "--reason", "r", "--return"],
            {"reason": "r", "return": True},
        ),
        (
            ["resume", "i", "--actor", "a", "--reason", "r", "--attempts", "2"],
            {"reason": "r", "attempts": 2},
        ),
    ],
)
def test_a_flag_left_out_is_absent_and_a_number_is_a_number(
    argv: list[str], expected: dict[str, object]
) -> None:
    """A switch not given is left out of the body (as a JSON client leaves it out), not sent
    as false; an integer flag reaches the body as an integer, which the one check accepts."""
    args = build_parser().parse_args(argv)
    body, problems = body_of(COMMANDS[argv[0]], args)
    assert (body, problems) == (expected, [])
    assert validate(COMMANDS[argv[0]], body)[1] == []


@pytest.mark.parametrize(
    "argv",
    [
        ["approve", "i", "--actor", "  ", "--proposal", "d"],
        ["approve", "i", "--actor", "", "--proposal", "d"],
        ["resume", "i", "--actor", "a", "--reason", "r", "--attempts", "two"],
    ],
)
def test_a_blank_actor_or_a_number_that_is_not_one_is_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused by the parser (exit status 2) before anything is opened or decided."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "must not be empty" in err or "invalid int value" in err


# --- the HTTP API -----------------------------------------------------------------------------


def test_openapi_has_one_operation_per_entry_with_exactly_its_fields() -> None:
    """Each HTTP entry is one POST whose body schema holds exactly its fields; nothing more."""
    paths = document()["paths"]
    commands = {p.rsplit("/", 1)[1] for p in paths if p.startswith("/api/items/{item}/")}
    assert commands - {"history"} == {e.name for e in HTTP}
    for entry in HTTP:
        op = paths[f"/api/items/{{item}}/{entry.name}"]["post"]
        schema = op["requestBody"]["content"]["application/json"]["schema"]
        extra = {"author"} if entry.takes_actor else set()
        extra |= {"idempotency_key"} if entry.idempotent else set()
        assert set(schema["properties"]) == {f.name for f in entry.fields} | extra
        assert schema["required"] == [f.name for f in entry.fields if f.required]
        for field in entry.fields:
            assert schema["properties"][field.name]["description"] == field.help
        headers = {p["name"] for p in op["parameters"] if p["in"] == "header"}
        assert headers == ({"Idempotency-Key"} if entry.idempotent else set())
        assert op["operationId"] == entry.name
        assert op["summary"].lower() == entry.help.lower()


def test_the_routes_are_the_documented_paths() -> None:
    """Every API route is in the OpenAPI document with its method, and the reverse."""
    paths = document()["paths"]
    served = {
        (r.path, m.lower()) for r in routes() if isinstance(r, Route) for m in r.methods or ()
    }
    documented = {(p, m) for p, ops in paths.items() for m in ops}
    assert documented == {(p, m) for p, m in served if m != "head"}


# --- the web forms ------------------------------------------------------------------------------

ROOT = Actor("root", frozenset({"operator", "approver", "publisher"}))
STATES = [S.AWAITING_APPROVAL, S.READY_FOR_REVIEW, S.EXCEPTION, S.EXHAUSTED]
STATES += [S.REVISION_FAILED, S.COMPLETED]


class Forms(HTMLParser):
    """The action forms of a page: command name -> the names of its inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: dict[str, set[str]] = {}
        self.current: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form":
            action = found.get("action") or ""
            self.current = action.rsplit("/", 1)[1]
            assert found.get("data-testid") == f"action-{self.current}"
            self.forms[self.current] = set()
        elif tag in ("input", "textarea", "select") and self.current and found.get("name"):
            self.forms[self.current].add(str(found["name"]))

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.current = None


def rendered(item: Item, actor: Actor) -> tuple[list[ActionForm], dict[str, set[str]]]:
    pub = policy(delivery=DeliveryPolicy(mode=PUBLISH))
    forms = action_forms(item, actor, pub, datetime.now(UTC))
    html = str(ENV.get_template("_actions.html").module.forms(forms, {"id": item.id}, "T"))  # type: ignore[attr-defined]
    parser = Forms()
    parser.feed(html)
    return forms, parser.forms


@pytest.mark.parametrize("state", STATES)
def test_web_forms_hold_exactly_their_entrys_fields(state: State) -> None:
    """Each form is a web entry the actor may run, with its fields (and the CSRF token) only."""
    item = Harness().to(state)
    _, forms = rendered(item, ROOT)
    assert forms, state
    for name, inputs in forms.items():
        entry = COMMANDS[name]
        assert entry in WEB
        assert inputs - {"csrf"} <= {f.name for f in entry.fields}
        assert {f.name for f in entry.fields if f.required} <= inputs
        assert "csrf" in inputs and "actor" not in inputs


def test_every_web_entry_has_a_form_somewhere_and_nothing_else_does() -> None:
    """Across the stop states every web entry shows up; a viewer and a stranger get no form."""
    seen: set[str] = set()
    for state in STATES:
        item = Harness().to(state)
        seen |= set(rendered(item, ROOT)[1])
        assert rendered(item, Actor("viewer", frozenset({"viewer"})))[1] == {}
    publish = Harness().to(S.COMPLETED)
    review = {"verdict": "approve", "packet": publish.doc("review_packet")["digest"]}
    approved = publish.with_data(review=review)
    seen |= set(rendered(replace(publish, data=approved), ROOT)[1])
    assert seen == {e.name for e in WEB}


@pytest.mark.parametrize("state", STATES)
def test_a_generated_form_submits_a_valid_body(state: State) -> None:
    """Filled in as a person would (a reason typed), each form passes the table's validate()."""
    item = Harness().to(state)
    forms, _ = rendered(item, ROOT)
    for form in forms:
        pairs: list[tuple[str, str]] = [("csrf", "T")]
        for f in form.fields:
            if f.kind == "checklist":
                pairs += [(f.name, c) for c in f.checked]
            elif f.kind == "select":
                pairs.append((f.name, f.choices[0]))
            elif f.kind == "textarea" and f.required and not f.value:
                pairs.append((f.name, "typed by a person"))
            elif f.kind in ("hidden", "textarea"):
                pairs.append((f.name, str(f.value)))
        _, problems = form_values(COMMANDS[form.name], FormData(pairs))
        assert problems == [], (form.name, problems)


# --- hints are commands the CLI takes ------------------------------------------------------------

FILL = {"ACTOR": "olivia", '"REASON"': "because", "KEY": "a", '"approve|reject"': "approve"}


@pytest.mark.parametrize("state", STATES)
def test_every_hint_parses_as_a_command_once_its_placeholders_are_filled(state: State) -> None:
    """A hint, with ACTOR, REASON and KEY filled in, is a valid command line for its entry."""
    item = Harness().to(state)
    hints = next_commands(item)
    assert hints, state
    for line in hints:
        line = re.sub(r" \[[^\]]*\]", "", line)  # optional parts
        for placeholder, value in FILL.items():
            line = line.replace(f" {placeholder}", f" {value}")
        argv = shlex.split(line)[1:]
        args = build_parser().parse_args(argv)
        entry = COMMANDS[argv[0]]
        body, problems = body_of(entry, args)
        assert validate(entry, body)[1] == problems == [], line
        assert all(f.name in body for f in entry.fields if f.required)


def test_a_command_that_talks_to_the_target_takes_its_app_from_stopline_app(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--app`` falls back to ``STOPLINE_APP`` (as documented), and a flag given wins."""
    monkeypatch.setenv("STOPLINE_APP", "ops.py:app")
    argv = ["reconcile", "i", "--actor", "a", "--artifact", "x"]
    assert build_parser().parse_args(argv).app == "ops.py:app"
    assert build_parser().parse_args([*argv, "--app", "other.py:app"]).app == "other.py:app"
    monkeypatch.delenv("STOPLINE_APP")
    assert build_parser().parse_args(argv).app is None
