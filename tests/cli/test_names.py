"""Names at the command line, through ``stopline``'s ``main(argv)`` in this process (``run``,
which starts workers, as the real program), on SQLite and PostgreSQL.

Look-alike actor names are refused (exit 2, one line, nothing written), fullwidth input
normalises, an automation named with a ``/`` is refused when the app is built, and
``AUTOMATION/KEY`` splits at the first ``/``.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from helpers import count, dump
from stopline.cli.main import main
from stopline.core.names import ACTOR, AUTOMATION, ROLE, InvalidName, name_problem
from stopline.core.records import Actor
from stopline.logs import ENV_FORMAT
from stopline.runtime.automation import App
from stopline.store import open_store

from .apps.names_app import automation

STOPLINE = Path(sys.executable).parent / "stopline"
APP_FILE = Path(__file__).parent / "apps" / "names_app.py"
CYRILLIC_ALICE = "\u0430lice"  # the first letter is U+0430, not the Latin "a"
FULLWIDTH_ALICE = "".join(chr(ord(c) - ord("a") + 0xFF41) for c in "alice")


def stopline(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``stopline ARGS --db URL --json``: ``run`` as the real program (it starts workers and
    signal handlers), every other command through ``main(argv)`` here, its output captured and
    the logging set-up it changes put back."""
    argv = [*args, "--db", url, "--json"]
    if args[0] == "run":
        return subprocess.run(
            [str(STOPLINE), *argv], capture_output=True, text=True, timeout=120, check=False
        )
    root = logging.getLogger()
    handlers, level, fmt = list(root.handlers), root.level, os.environ.get(ENV_FORMAT)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse's own usage errors
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        if fmt is None:
            os.environ.pop(ENV_FORMAT, None)
        else:
            os.environ[ENV_FORMAT] = fmt
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def ok(url: str, *args: str) -> Any:
    done = stopline(url, *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def usage_error(url: str, *args: str) -> str:
    """``args`` exits 2 with nothing on stdout and exactly one line on stderr; that line."""
    done = stopline(url, *args)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("stopline: "), done.stderr
    return lines[0]


def state(url: str) -> tuple[Any, int]:
    """Every table but ``refusals``, and the number of refusals."""
    store = open_store(url)
    try:
        return dump(store), count(store, "refusals")
    finally:
        store.close()


def actors(url: str) -> dict[str, dict[str, Any]]:
    return {a["name"]: a for a in ok(url, "actors", "list")["actors"]}


def test_a_cyrillic_lookalike_actor_is_refused_and_nothing_is_written(store_url: str) -> None:
    """actors add with a Cyrillic "a" beside alice: exit 2, one clear line, no write at all."""
    ok(store_url, "actors", "add", "alice", "--role", "approver")
    before = state(store_url)
    line = usage_error(store_url, "actors", "add", CYRILLIC_ALICE, "--role", "approver")
    assert "U+0430 CYRILLIC SMALL LETTER A at position 1" in line
    assert "actor names use a-z 0-9 . _ - @" in line
    assert state(store_url) == before
    assert list(actors(store_url)) == ["alice"]


def test_fullwidth_input_is_the_ascii_actor(store_url: str) -> None:
    """Fullwidth letters normalise: add, token and revoke all reach the one actor alice."""
    added = ok(store_url, "actors", "add", FULLWIDTH_ALICE, "--role", "approver")
    assert added["actor"] == "alice"
    ok(store_url, "actors", "add", "alice", "--role", "operator")
    assert actors(store_url) == {
        "alice": {"name": "alice", "roles": ["approver", "operator"], "active": True}
    }
    token = ok(store_url, "actors", "token", FULLWIDTH_ALICE)
    assert token["actor"] == "alice" and token["token"].startswith("stl_")
    assert ok(store_url, "actors", "revoke", FULLWIDTH_ALICE)["active"] is False
    assert list(actors(store_url)) == ["alice"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["add", "Alice", "--role", "approver"], "actor names are lower case: write 'alice'"),
        (["add", "a1ice", "--role", "approver"], "looks like the registered actor 'alice'"),
        (["add", "bob", "--role", "Approver"], "role names are lower case: write 'approver'"),
        (["add", "ops/bob", "--role", "approver"], "U+002F SOLIDUS at position 4"),
        (["token", CYRILLIC_ALICE], "U+0430 CYRILLIC SMALL LETTER A"),
        (["revoke", "Alice"], "actor names are lower case"),
    ],
)
def test_bad_names_and_roles_are_refused_with_what_to_write(
    store_url: str, args: list[str], says: str
) -> None:
    """Upper case, ASCII look-alikes and bad roles: exit 2 naming the problem, no write."""
    ok(store_url, "actors", "add", "alice", "--role", "approver")
    before = state(store_url)
    assert says in usage_error(store_url, "actors", *args)
    assert state(store_url) == before


def test_a_bad_name_an_older_registry_holds_can_still_be_revoked(store_url: str) -> None:
    """A stored look-alike is revoked by its exact name; it gets no new token."""
    store = open_store(store_url)
    try:
        planted = Actor(CYRILLIC_ALICE, frozenset({"approver"}))
        store.set_actor(planted, "add", {"roles": ["approver"]}, datetime.now(UTC))
    finally:
        store.close()
    assert "U+0430" in usage_error(store_url, "actors", "token", CYRILLIC_ALICE)
    revoked = ok(store_url, "actors", "revoke", CYRILLIC_ALICE)
    assert (revoked["actor"], revoked["active"]) == (CYRILLIC_ALICE, False)


def test_an_automation_named_with_a_slash_is_refused_when_built(
    store_url: str, tmp_path: Path
) -> None:
    """Automation(name="a/b") and App(...) refuse it; `stopline run` exits 2 and stores nothing."""
    with pytest.raises(InvalidName, match=r"U\+002F SOLIDUS at position 2"):
        automation("a/b", "c")
    good = automation("a", "c")
    good.name = "a/b"  # changed after construction: the App refuses it too
    with pytest.raises(InvalidName, match="separates AUTOMATION/KEY"):
        App([good])
    with pytest.raises(InvalidName, match="actor names are lower case"):
        App([automation("a", "c")], actors={"Carol": ("operator",)})

    module = tmp_path / "slash_module.py"  # the bad App is built when the module is imported
    module.write_text(APP_FILE.read_text() + '\napp = App([automation("x/y", "c")])\n')
    ok(store_url, "migrate")
    before = state(store_url)
    for spec in (f"{APP_FILE}:slash", f"{module}:app"):
        line = usage_error(store_url, "run", spec, "--once", "--linger", "0")
        assert "SOLIDUS" in line and "automation names use a-z 0-9 . _ -" in line
    assert state(store_url) == before
    assert before[0]["automations"] == [] and before[0]["items"] == []


def test_automation_key_splits_at_the_first_slash(store_url: str) -> None:
    """a/b/c is automation a, key b/c for show, history and an item command; a/b is key b."""
    done = stopline(store_url, "run", f"{APP_FILE}:app", "--once", "--linger", "0")
    assert done.returncode == 0, done.stderr
    items = {(i["automation"], i["key"]): i for i in ok(store_url, "items")["items"]}
    assert set(items) == {("a", "b/c"), ("a", "b"), ("b", "c")}
    assert {i["state"] for i in items.values()} == {"exception"}

    for ref, expected in (("a/b/c", ("a", "b/c")), ("a/b", ("a", "b")), ("b/c", ("b", "c"))):
        shown = ok(store_url, "show", ref)
        assert (shown["automation"], shown["key"], shown["id"]) == (
            *expected,
            items[expected]["id"],
        )
        history = ok(store_url, "history", ref)
        assert history["item"] == items[expected]["id"]
        assert history["events"][0]["command"] == "discover"

    closed = ok(store_url, "close", "a/b/c", "--actor", "carol", "--reason", "seen")
    assert (closed["decision"], closed["item"], closed["state"]) == (
        "applied",
        items[("a", "b/c")]["id"],
        "closed",
    )
    after = {(i["automation"], i["key"]): i["state"] for i in ok(store_url, "items")["items"]}
    assert after == {("a", "b/c"): "closed", ("a", "b"): "exception", ("b", "c"): "exception"}
    missing = stopline(store_url, "show", "a/b/c/d")
    assert missing.returncode == 3 and json.loads(missing.stdout)["reasons"] == ["unknown_item"]


def test_names_declared_by_the_bundled_demo_are_valid() -> None:
    """The demo's automations, actors and roles already use the alphabet, in normal form."""
    from stopline.examples.demo import app as demo

    found = [(AUTOMATION, a.name) for a in demo.automations]
    found += [(ACTOR, name) for name in demo.actors]
    found += [(ROLE, role) for roles in demo.actors.values() for role in roles]
    assert len(found) >= 6
    assert [(kind, name) for kind, name in found if name_problem(kind, name)] == []
