"""What the inbox's pages show (``web/present.py``), on its own: ages, the groups of the inbox,
a proposal's parameters and its changes, the artifacts' readback status, the evidence's age
and the item page's model. The pages' own tests render them behind a real server; these hold
each rule where a wrong one would mislead the person who approves (each was missing while a
mutant of the module passed them)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from core.helpers import Harness
from stopline.core.commands import Edit
from stopline.core.frozen import freeze, thaw
from stopline.core.integrity import Finding
from stopline.core.records import Event
from stopline.core.transitions import Cmd
from stopline.web.forms import pretty
from stopline.web.present import (
    age_text,
    artifact_rows,
    evidence_info,
    groups,
    item_page,
    mismatches,
    params_rows,
    proposal_diff,
    timeline,
)

from .httphelp import item_html


def test_an_age_is_written_in_the_largest_unit_that_fits() -> None:
    assert [age_text(s) for s in (0, 59, 60, 3599, 3600)] == [
        "0 s",
        "59 s",
        "1 min",
        "59 min",
        "1 h 0 min",
    ]
    assert age_text(3 * 3600 + 25 * 60 + 7) == "3 h 25 min"
    assert age_text(86400) == "1 d 0 h"
    assert age_text(2 * 86400 + 5 * 3600 + 59 * 60) == "2 d 5 h"
    # a clock a little behind the record's time never shows a negative age
    assert age_text(-30) == "0 s"


def test_the_groups_are_the_stop_states_with_their_counts_and_oldest_ages() -> None:
    counts = {
        "exception": (3, 7200.0),
        "ready_for_review": (1, None),
        "completed": (40, 99.0),  # not a stop state: no group of its own
    }
    found = {g.state: g for g in groups([], counts)}
    assert list(found) == [
        "awaiting_approval",
        "exception",
        "exhausted",
        "revision_failed",
        "ready_for_review",
    ]
    assert (found["exception"].count, found["exception"].oldest) == (3, "2 h 0 min")
    assert (found["ready_for_review"].count, found["ready_for_review"].oldest) == (1, "")
    assert (found["exhausted"].count, found["exhausted"].oldest) == (0, "")


def test_parameters_show_text_as_written_and_the_rest_as_json() -> None:
    draft = "Dear customer,\n\nthank you."
    rows = params_rows({"params": {"body": draft, "grace": 5, "tags": ["a"]}})
    assert rows == [("body", draft), ("grace", "5"), ("tags", pretty(["a"]))]
    # parameters that are not an object are shown whole; no proposal, nothing
    assert params_rows({"params": [1, 2]}) == [("params", pretty([1, 2]))]
    assert params_rows(None) == []


def _diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    return {
        change["field"]: [(line["kind"], line["text"]) for line in change["lines"]]
        for change in proposal_diff(old, new)
    }


def test_a_changed_proposal_shows_each_changed_field_line_by_line() -> None:
    old = {"action": "reply", "target": "t-1", "rationale": "asked", "params": {"grace": 5}}
    new = {"action": "reply", "target": "t-1", "rationale": "asked twice", "params": {"grace": 6}}
    diff = _diff(old, new)
    assert list(diff) == ["rationale", "params.grace"]
    # no file header lines: the hunk, then what went and what came
    assert diff["rationale"] == [
        ("hunk", "@@ -1 +1 @@"),
        ("del", "-asked"),
        ("add", "+asked twice"),
    ]
    assert diff["params.grace"][1:] == [("del", "-5"), ("add", "+6")]
    # nothing to compare with: no diff
    assert proposal_diff(None, new) == [] and proposal_diff(old, None) == []
    assert proposal_diff(old, dict(old)) == []


def test_a_changed_draft_shows_two_lines_of_context_around_the_change() -> None:
    lines = [f"line {i}" for i in range(10)]
    changed = [*lines[:5], "line five", *lines[6:]]
    diff = _diff({"params": {"body": "\n".join(lines)}}, {"params": {"body": "\n".join(changed)}})
    assert diff["params.body"] == [
        ("hunk", "@@ -4,5 +4,5 @@"),
        ("same", " line 3"),
        ("same", " line 4"),
        ("del", "-line 5"),
        ("add", "+line five"),
        ("same", " line 6"),
        ("same", " line 7"),
    ]


def _artifact(key: str, verified: bool = True) -> dict[str, Any]:
    return {
        "key": key,
        "title": f"title of {key}",
        "assets": ["a.png"],
        "readback_verified": verified,
    }


def test_each_artifact_says_whether_its_readback_matched() -> None:
    view = {
        "artifacts": [
            _artifact("ok"),
            _artifact("unread", verified=False),
            _artifact("gone", verified=False),
            _artifact("changed"),
            _artifact("revised"),
        ],
        "exception": {
            "evidence": {
                "gone": {"missing": True},
                "changed": {"fields": ["title", "assets"], "observed": "f00d"},
                "note": "not a mismatch",
            }
        },
        "revision": {"failure": {"mismatches": {"revised": {"fields": ["title"]}, "x": 1}}},
    }
    assert set(mismatches(view)) == {"gone", "changed", "revised"}
    rows = {row["key"]: row for row in artifact_rows(view)}
    assert {k: row["status"] for k, row in rows.items()} == {
        "ok": "verified",
        "unread": "unverified",
        "gone": "missing",
        "changed": "mismatch",
        "revised": "mismatch",
    }
    assert rows["changed"]["observed_hash"] == "f00d"
    assert rows["ok"]["observed_hash"] is None
    assert rows["changed"]["diff"] == [
        {"field": "title", "intended": "title of changed"},
        {"field": "assets", "intended": pretty(["a.png"])},
    ]


def test_the_evidence_shows_its_age_its_digest_and_whether_it_is_stale() -> None:
    h = Harness()
    item = h.to_awaiting()
    view = {"evidence": item.doc("evidence"), "proposal": item.doc("proposal")}
    later = h.now + timedelta(minutes=30)
    info = evidence_info(view, later)
    assert info is not None
    assert (info["age"], info["stale"], info["max_age"]) == ("30 min", False, "1 h 0 min")
    assert info["digest"] == item.doc("evidence")["digest"]
    assert info["data"] == pretty({"cpu": 97})
    stale = evidence_info(view, h.now + timedelta(hours=2))
    assert stale is not None and stale["stale"] is True
    # evidence without a proposal is never called stale, and a missing time is unknown
    bare = evidence_info({"evidence": {"data": {}}}, later)
    assert bare is not None and (bare["age"], bare["stale"], bare["max_age"]) == (
        "unknown",
        False,
        None,
    )
    assert evidence_info({"evidence": None}, later) is None


def test_a_note_shows_its_body_apart_from_the_rest_of_its_detail() -> None:
    h = Harness()
    h.to_awaiting()
    events = list(h.events)
    note = Event.sealed(
        item_id=events[-1].item_id,
        seq=events[-1].seq + 1,
        at=h.now,
        command=Cmd.NOTE.value,
        actor="alice",
        from_state=events[-1].to_state,
        to_state=events[-1].to_state,
        reasons=(),
        digests={},
        detail={"body": "called the customer", "author": {"kind": "human"}, "ref": "T-1"},
        prev_hash=events[-1].hash,
    )
    shown = timeline([*events, note])
    assert shown[-1]["note_body"] == "called the customer"
    assert shown[-1]["detail_text"] == pretty({"ref": "T-1"})  # no body, no author
    assert all(entry["note_body"] == "" for entry in shown[:-1])


def _page(h: Harness, actor: str, **kwargs: Any) -> dict[str, Any]:
    item = h.it
    options: dict[str, Any] = {"read_only": False, "may_command": True}
    options.update(kwargs)
    return item_page(
        item, list(h.events), h.now, h.actors[actor], h.policy, actors=h.actors, **options
    )


def test_the_item_page_offers_the_actions_the_actor_may_take() -> None:
    h = Harness()
    h.to_awaiting()
    assert [form.name for form in _page(h, "alice")["actions"]] == ["approve", "reject", "note"]
    # a read-only server, or an actor who may run no command: no forms at all
    assert _page(h, "alice", read_only=True)["actions"] == []
    assert _page(h, "alice", may_command=False)["actions"] == []


def test_a_record_nobody_can_trust_offers_only_close() -> None:
    h = Harness()
    h.to_awaiting()
    assert "close" in [form.name for form in _page(h, "olivia")["actions"]]
    finding = Finding("event", "x#1", "hash", "event_altered", "the event was altered")
    page = _page(h, "olivia", findings=[finding])
    assert [form.name for form in page["actions"]] == ["close"]
    assert page["integrity"]["ok"] is False


def test_the_item_page_knows_who_approved_and_how_long_the_item_has_waited() -> None:
    h = Harness()
    h.to_awaiting()
    assert _page(h, "alice")["approved_by_me"] is False
    h.approve("alice")
    assert _page(h, "alice")["approved_by_me"] is True
    assert _page(h, "bob")["approved_by_me"] is False
    since = h.now - timedelta(hours=3)
    page = _page(h, "bob", since=since)
    assert page["in_state"] == "3 h 0 min" and page["age"] == "0 s"


def test_the_item_page_shows_the_change_from_the_previous_proposal() -> None:
    h = Harness()
    h.to_awaiting()
    page = _page(h, "alice")
    assert page["diff"] == [] and page["params"] == [("grace", "5")]
    h.ok(Edit("olivia", {"grace": 30}))
    page = _page(h, "alice")
    assert page["params"] == [("grace", "30")]
    assert [change["field"] for change in page["diff"]] == ["params.grace"]


@pytest.mark.parametrize(
    "edit",
    [
        {"approvals": 5},
        {"approvals": None},
        {"approvals": [1, "x", {"actor": 5}]},
        {"proposal": "a list"},
    ],
    ids=["a-number", "null", "junk-entries", "proposal-a-list"],
)
def test_a_record_edited_into_another_shape_is_shown_as_stored_with_only_close(
    edit: dict[str, Any],
) -> None:
    """A proposal edited by SQL into a shape no write makes: the page renders (its findings,
    its data as stored) and offers Close alone, instead of failing with a 500."""
    h = Harness()
    h.to_awaiting()
    data = thaw(h.it.data)
    if "proposal" in edit:
        data["proposal"] = [data["proposal"]]
    else:
        data["proposal"].update(edit)
    h.item = replace(h.it, data=freeze(data))
    finding = Finding("item", h.it.id, "proposal", "record_malformed", "not a list")
    page = _page(h, "olivia", findings=[finding])
    assert [form.name for form in page["actions"]] == ["close"]
    html = item_html(page, h.actors["olivia"])
    assert 'data-testid="integrity-failed"' in html
    assert 'data-testid="close-form"' in html or ">Close<" in html
    if page["item"].get("malformed"):
        assert 'data-testid="stored-data"' in html
