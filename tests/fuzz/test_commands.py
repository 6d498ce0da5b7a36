"""The command layer under hostile bodies: ``commands.entry.validate()`` and
``commands.perform.perform()`` as every shell calls them, and the controller given core
commands built from hostile values directly (as a library caller may), each case on a fresh
copy of the demo database.

Property: never an exception. Input the table's checks refuse is a list of problems and
writes nothing (not even an audit row); a command the core refuses is a decision with its
reason codes and writes nothing but its audit row.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from stopline.commands.entry import Entry, validate
from stopline.commands.fields import Type
from stopline.commands.perform import perform
from stopline.commands.table import ENTRIES
from stopline.controller import Controller
from stopline.core.decision import Decision, Outcome
from stopline.core.reasons import Reason
from stopline.store import open_store
from strategies import hostile_values, json_values

from .conftest import PEOPLE, DemoTemplate
from .kit import Tally, changes, fuzz_settings, hostile_texts, shown, snapshot, tally


def good_values(kind: Type, digests: list[str]) -> st.SearchStrategy[Any]:
    if kind is Type.TEXT:
        return st.sampled_from([*digests, "approve", "reject", "article-1", "a reason"])
    if kind is Type.BOOL:
        return st.booleans()
    if kind is Type.INT:
        return st.integers(1, 5)
    if kind is Type.OBJECT:
        return st.dictionaries(st.text(max_size=6), json_values(), max_size=4)
    return st.lists(st.sampled_from(["article-1", "article-2", "reply"]), min_size=1, max_size=3)


def hostile(max_depth: int = 80) -> st.SearchStrategy[Any]:
    return hostile_values(max_depth=max_depth, max_string=300) | hostile_texts()


@st.composite
def bodies(draw: Any, entry: Entry, digests: list[str]) -> Any:
    """A JSON body for ``entry``: each field fine, hostile or left out; unknown fields; or
    no object at all."""
    if not draw(st.integers(0, 19)):
        return draw(hostile())
    body: dict[Any, Any] = {}
    for f in entry.fields:
        choice = draw(st.integers(0, 5))
        if choice == 0:
            continue
        body[f.name] = draw(hostile() if choice == 1 else good_values(f.type, digests))
    if not draw(st.integers(0, 9)):
        body[draw(st.sampled_from(["actor", "nope", "params"]) | hostile_texts())] = draw(hostile())
    return body


def refs(demo_db: DemoTemplate) -> st.SearchStrategy[str]:
    return st.sampled_from(demo_db.refs) | hostile_texts()


def actors() -> st.SearchStrategy[Any]:
    return st.sampled_from(PEOPLE) | hostile_texts()


def check_decision(t: Tally, what: str, decision: Any) -> Decision:
    if not isinstance(decision, Decision):
        t.crash(f"{what} answered {decision!r}, not a decision")
    if decision.outcome is Outcome.REFUSED and not decision.reasons:
        t.crash(f"{what} was refused without a reason")
    return decision


def test_the_command_layer_answers_hostile_bodies(
    demo_db: DemoTemplate, tmp_path: Path, clean_env: None, record_property: Any
) -> None:
    with tally("command layer: validate() and perform()", record_property) as t:

        @fuzz_settings(weight=3)
        @given(data=st.data())
        def case(data: Any) -> None:
            t.cases += 1
            entry = data.draw(st.sampled_from(ENTRIES), "entry")
            body = data.draw(bodies(entry, demo_db.digests), "body")
            ref = data.draw(refs(demo_db), "ref")
            actor = data.draw(actors(), "actor")
            url = demo_db.copy(tmp_path)
            before = snapshot(url)
            store = open_store(url, migrate=False)
            what = f"{entry.name} {shown(ref)} as {shown(actor)} with {shown(body)}"
            try:
                fields, problems = validate(entry, body)
                done = None
                if not problems:
                    done = perform(
                        Controller(store, trust=None), entry, ref, actor=actor, fields=fields
                    )
            except Exception as exc:
                t.crash(f"{what} raised {type(exc).__name__}: {exc}")
            finally:
                store.close()
            if done is None or done.problems:
                t.refused += 1
                audit = False  # refused before anything ran: not even an audit row
            else:
                decision = check_decision(t, what, done.decision)
                if decision.outcome is not Outcome.REFUSED:
                    t.accepted += 1
                    return
                t.refused += 1
                audit = True
            changed = changes(before, snapshot(url), audit=audit)
            if changed:
                t.wrote(f"{what}: refused, and {changed}")

        case()


CORE_FIELDS = {
    entry.name: [f.name for f in dataclasses.fields(entry.command) if f.name != "actor"]
    for entry in ENTRIES
}


def test_the_controller_refuses_hostile_core_commands_with_reasons(
    demo_db: DemoTemplate, tmp_path: Path, clean_env: None, record_property: Any
) -> None:
    """Core commands built from hostile values without the table's checks (a library
    caller): the controller answers each with a decision, and a refusal writes only its
    audit row."""
    with tally("command layer: Controller.run(core command)", record_property) as t:

        @fuzz_settings(weight=2)
        @given(data=st.data())
        def case(data: Any) -> None:
            t.cases += 1
            entry = data.draw(st.sampled_from(ENTRIES), "entry")
            values = {
                name: data.draw(hostile(max_depth=700), name)
                for name in CORE_FIELDS[entry.name]
                if data.draw(st.booleans())
            }
            ref = data.draw(refs(demo_db), "ref")
            actor = data.draw(actors(), "actor")
            key = data.draw(st.none() | hostile_texts(), "idempotency key")
            what = f"{entry.name} {shown(ref)} as {shown(actor)} with {shown(values)}"
            try:
                command = entry.command(actor=actor, **values)
            except (TypeError, ValueError):
                t.refused += 1  # the dataclass refused it: nothing ran
                return
            url = demo_db.copy(tmp_path)
            before = snapshot(url)
            store = open_store(url, migrate=False)
            try:
                decision = Controller(store, trust=None).run(ref, command, idempotency_key=key)
            except Exception as exc:
                t.crash(f"{what} raised {type(exc).__name__}: {exc}")
            finally:
                store.close()
            check_decision(t, what, decision)
            if decision.outcome is not Outcome.REFUSED:
                t.accepted += 1
                return
            t.refused += 1
            changed = changes(before, snapshot(url), audit=True)
            if changed:
                t.wrote(f"{what}: refused {decision.reasons}, and {changed}")
            assert Reason.INVALID_INPUT in decision.reasons or decision.reasons

        case()
