"""How the views show a record edited by SQL into a shape no write makes (``views.py``,
``web/forms.py``, ``web/present.py``, ``agents/answers.py``): as stored, ``malformed``, with
no command read off it but Close, while a sound record is shown as ever. Each rule here was
missing while a mutant of those modules passed every other test."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from core.helpers import Harness
from stopline.agents.answers import agent_view
from stopline.core.frozen import freeze, thaw
from stopline.core.integrity import Finding
from stopline.views import MALFORMED, item_view, next_commands, summary_view, why
from stopline.web.forms import action_forms, approved_by
from stopline.web.present import item_page

from .httphelp import item_html


def as_list(proposal: dict[str, Any]) -> Any:
    return [proposal]


def approvals_a_number(proposal: dict[str, Any]) -> Any:
    return {**proposal, "approvals": 5}


def no_required_approvals(proposal: dict[str, Any]) -> Any:
    return {k: v for k, v in proposal.items() if k != "required_approvals"}


def junk_approvals(proposal: dict[str, Any]) -> Any:
    return {**proposal, "approvals": [1, "x"]}


EDITS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "proposal-a-list": as_list,  # AttributeError in the view, TypeError in why
    "approvals-a-number": approvals_a_number,  # TypeError
    "no-required-approvals": no_required_approvals,  # KeyError
    "junk-approvals": junk_approvals,
}


def edited(edit: Callable[[dict[str, Any]], Any]) -> Harness:
    """An item awaiting approval whose proposal was then edited by SQL with ``edit``."""
    h = Harness()
    h.to_awaiting()
    data = thaw(h.it.data)
    data["proposal"] = edit(data["proposal"])
    h.item = replace(h.it, data=freeze(data))
    return h


@pytest.mark.parametrize("name", ["proposal-a-list", "approvals-a-number", "no-required-approvals"])
def test_a_malformed_record_is_shown_as_stored_with_its_columns(name: str) -> None:
    h = edited(EDITS[name])
    view = item_view(h.it, h.actors)
    assert view["malformed"] is True
    assert view["data"] == thaw(h.it.data)
    # every document empty, the columns as the store read them
    assert view["proposal"] is None and view["grants"] == [] and view["artifacts"] == []
    assert view["severity"] == "normal" and view["delivery_seq"] == 0
    assert (view["id"], view["state"], view["version"]) == (
        h.it.id,
        "awaiting_approval",
        h.it.version,
    )


def test_a_sound_record_is_not_shown_as_stored() -> None:
    h = Harness()
    h.to_awaiting()
    view = item_view(h.it, h.actors)
    assert "malformed" not in view and "data" not in view
    assert view["proposal"]["digest"] == h.digest()


@pytest.mark.parametrize("name", ["proposal-a-list", "no-required-approvals"])
def test_why_says_a_malformed_record_is_malformed_and_offers_no_command(name: str) -> None:
    h = edited(EDITS[name])
    assert why(h.it, h.actors) == MALFORMED
    # the hints read only what they need: a proposal that is no object gives none
    assert (next_commands(h.it) == []) is (name == "proposal-a-list")


def test_a_summary_row_carries_the_digest_of_a_sound_proposal_and_none_of_a_list() -> None:
    h = Harness()
    h.to_awaiting()
    row = summary_view(h.it, h.actors)
    assert row["proposal_digest"] == h.digest()
    assert row["approvable"] is True and row["next"]
    h = edited(as_list)
    row = summary_view(h.it, h.actors)
    assert row["proposal_digest"] is None
    assert row["why"] == MALFORMED and row["next"] == [] and row["approvable"] is None


def test_approval_is_of_the_current_proposal_and_never_of_a_malformed_one() -> None:
    h = Harness()
    h.to_awaiting()
    h.approve("alice")
    assert approved_by(h.it, "alice") is True
    # the proposal changes under the approval: alice has not approved this one
    data = thaw(h.it.data)
    data["proposal"]["digest"] = "sha256:" + "0" * 64
    h.item = replace(h.it, data=freeze(data))
    assert approved_by(h.it, "alice") is False
    assert approved_by(edited(junk_approvals).it, "alice") is False


def test_only_limits_the_forms_to_those_named() -> None:
    h = Harness()
    h.to_awaiting()
    olivia = h.actors["olivia"]
    every = [f.name for f in action_forms(h.it, olivia, h.policy, h.now)]
    assert "close" in every and len(every) > 1
    assert [f.name for f in action_forms(h.it, olivia, h.policy, h.now, frozenset({"close"}))] == [
        "close"
    ]
    assert action_forms(h.it, olivia, h.policy, h.now, frozenset()) == []


@pytest.mark.parametrize("name", sorted(EDITS))
def test_a_malformed_record_still_gets_the_forms_that_can_be_read(name: str) -> None:
    """A form that cannot be read off the record is left out; the rest are offered, and
    listing them never fails."""
    h = edited(EDITS[name])
    olivia = [f.name for f in action_forms(h.it, h.actors["olivia"], h.policy, h.now)]
    alice = [f.name for f in action_forms(h.it, h.actors["alice"], h.policy, h.now)]
    assert "close" in olivia and "reinspect" in olivia
    assert "approve" not in olivia + alice


def test_the_item_page_without_findings_offers_every_allowed_form() -> None:
    h = Harness()
    h.to_awaiting()
    page = item_page(h.it, [], h.now, h.actors["alice"], h.policy, False, True, h.actors)
    assert [f.name for f in page["actions"]] == ["approve", "reject", "note"]
    assert page["integrity"] == {"ok": True, "findings": []}


def test_the_item_page_of_a_malformed_record_shows_its_data_as_stored() -> None:
    h = edited(as_list)
    finding = Finding("item", h.it.id, "proposal", "record_malformed", "not an object")
    page = item_page(
        h.it, [], h.now, h.actors["olivia"], h.policy, False, True, h.actors, findings=[finding]
    )
    assert page["why"] == MALFORMED and page["approved_by_me"] is False
    assert [f.name for f in page["actions"]] == ["close"]
    html = item_html(page, h.actors["olivia"])
    assert 'data-testid="stored-data"' in html
    assert "Its data, as stored" in html and str(h.it.data["proposal"][0]["action"]) in html
    sound = Harness()
    sound.to_awaiting()
    page = item_page(sound.it, [], sound.now, None, sound.policy, False, True, sound.actors)
    html = item_html(page, None)
    assert 'data-testid="stored-data"' not in html


@pytest.mark.parametrize("name", ["proposal-a-list", "no-required-approvals"])
def test_an_agent_sees_a_malformed_record_with_no_document_read_off_it(name: str) -> None:
    h = edited(EDITS[name])
    view = agent_view(h.it)
    assert view["malformed"] is True
    assert view["proposal"] is None and view["digest"] is None
    assert (view["item"], view["state"]) == (h.it.id, "awaiting_approval")
    sound = Harness()
    sound.to_awaiting()
    assert "malformed" not in agent_view(sound.it)
    assert agent_view(sound.it)["digest"] == sound.digest()
