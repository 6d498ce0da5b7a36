"""What the plain views (``views.py``) show of a sound record, as ``stopline show --json``,
``stopline items`` and the inbox print it: the one line of why an item is where it is, in each
state, the proposal's outlook, the lease and revision blocks, a listing row, an event. Each
rule here was missing while a mutant of the module passed every other test."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from core.helpers import Harness, art, policy
from stopline.core.artifacts import Artifact, Asset
from stopline.core.canonical import format_time
from stopline.core.commands import Acknowledge, Close, Failure, NothingToDo
from stopline.core.frozen import freeze, thaw
from stopline.core.integrity import Finding
from stopline.core.records import Item
from stopline.core.states import State
from stopline.views import event_view, item_view, outlook, summary_view, unsealed, why

S = State


def with_data(item: Item, **changes: Any) -> Item:
    """``item`` with documents of its data replaced (``None`` removes one)."""
    return replace(item, data=item.with_data(**changes))


def test_a_work_state_says_when_it_is_due_and_which_attempt() -> None:
    h = Harness()
    h.to(S.OBSERVING)
    due = format_time(h.it.next_eligible_at)
    assert why(h.it) == f"due {due} (attempt 0 of 3)"


def test_a_waiting_proposal_says_what_it_needs() -> None:
    h = Harness(policy=policy(approvals=2))
    h.to_awaiting()
    h.approve("alice")
    assert why(h.it, h.actors) == "restart on web-1 needs approval (1 of 2)"
    # no target: a dash
    assert why(with_data(h.it, proposal={**h.it.doc("proposal"), "target": None})) == (
        "restart on - needs approval (1 of 2)"
    )


def test_a_proposal_no_one_left_can_approve_says_so_only_with_the_registry() -> None:
    h = Harness(policy=policy(approvals=2))
    h.to_awaiting()
    h.approve("alice")
    bob_gone = {k: v for k, v in h.actors.items() if k not in ("bob", "carol", "automation:auto")}
    assert why(h.it, bob_gone) == (
        "restart on web-1 needs approval (1 of 2); CANNOT BE APPROVED: 0 eligible approver(s) left"
    )
    assert why(h.it) == "restart on web-1 needs approval (1 of 2)"
    seen = outlook(h.it, bob_gone)
    assert seen is not None and seen.satisfiable is False
    assert outlook(h.it, None) is None
    row = summary_view(h.it, bob_gone)
    assert row["approvable"] is False
    assert summary_view(h.it, h.actors)["approvable"] is True
    assert summary_view(h.it)["approvable"] is None


def test_a_proposal_no_longer_waiting_has_no_outlook() -> None:
    """Once approved (or closed), a proposal kept on the record is not shown as approvable."""
    h = Harness()
    h.to_awaiting()
    h.approve("alice")
    assert h.state is S.APPROVED and h.it.doc("proposal") is not None
    assert outlook(h.it, h.actors) is None
    assert summary_view(h.it, h.actors)["approvable"] is None


def test_an_agents_item_names_the_agent() -> None:
    h = Harness()
    h.to_awaiting()
    waiting = with_data(h.it, agent="claude")
    assert why(waiting, h.actors) == (
        "restart on web-1 needs approval (0 of 1), proposed by the agent claude"
    )
    h.approve("alice")
    assert why(with_data(h.it, agent="claude")) == (
        "the agent claude carries it out (attempt 0 of 3)"
    )
    done = Harness()
    done.to_completed([art("a")])
    assert why(with_data(done.it, agent="claude")) == "carried out by the agent claude"
    assert why(done.it) == "delivered and read back (1 artifact)"


def test_a_report_shows_its_summary_or_says_there_is_one() -> None:
    h = Harness()
    h.to(S.READY_FOR_REVIEW)
    assert why(h.it) == "nothing to do"
    report = thaw(h.it.doc("report"))
    report["data"].pop("summary")
    assert why(with_data(h.it, report=report)) == "a result to read"


def test_an_exception_and_an_exhaustion_say_why() -> None:
    h = Harness()
    h.to(S.EXCEPTION)
    assert why(h.it) == "needs eyes (ops): ambiguous"
    h = Harness()
    h.to(S.EXHAUSTED)
    assert why(h.it) == "3 of 3 attempts spent; last: net: down"
    account = {k: v for k, v in thaw(h.it.doc("account")).items() if k != "last_error"}
    assert why(with_data(h.it, account=account)) == "3 of 3 attempts spent; last: None: None"


def test_a_failed_revision_and_a_failure_say_what_failed() -> None:
    h = Harness()
    h.to(S.REVISION_FAILED)
    assert why(h.it) == "revision 1 failed: boom"
    h = Harness()
    h.discover()
    h.claim()
    h.ok(
        Failure(**h.lease(), failure_class="forbidden", message="no authority", retryable=False),
        S.FAILED,
    )
    assert why(h.it) == "forbidden: no authority"


@pytest.mark.parametrize("count", [2, 3])
def test_a_delivery_counts_its_artifacts(count: int) -> None:
    h = Harness()
    h.to_completed([art(k) for k in "abc"[:count]])
    assert why(h.it) == f"delivered and read back ({count} artifacts)"


def test_a_completion_with_nothing_to_do_says_why() -> None:
    h = Harness()
    h.discover()
    h.observe()
    h.claim()
    h.ok(NothingToDo(**h.lease(), reason="valid for 90 days"), S.COMPLETED)
    assert why(h.it) == "nothing to do: valid for 90 days"


def test_closed_items_say_how_and_by_whom() -> None:
    h = Harness()
    h.to(S.EXCEPTION)
    h.ok(Close("olivia", "not needed"), S.CLOSED)
    assert why(h.it) == "closed by olivia: not needed"
    h = Harness()
    h.to(S.READY_FOR_REVIEW)
    h.ok(Acknowledge("olivia"), S.CLOSED)
    assert why(h.it) == "acknowledged by olivia"


@pytest.mark.parametrize(
    ("state", "document"),
    [
        (S.AWAITING_APPROVAL, "proposal"),
        (S.READY_FOR_REVIEW, "report"),
        (S.EXCEPTION, "exception"),
        (S.EXHAUSTED, "account"),
        (S.REVISION_FAILED, "revision"),
    ],
)
def test_a_stop_state_without_its_document_has_no_line(state: State, document: str) -> None:
    """A stop whose document is gone says nothing rather than raising or inventing one."""
    h = Harness()
    h.to(state)
    assert why(with_data(h.it, **{document: None})) == ""


def test_a_closed_or_failed_item_without_its_document_has_no_line() -> None:
    h = Harness()
    h.to(S.EXCEPTION)
    h.ok(Close("olivia", "not needed"), S.CLOSED)
    assert why(with_data(h.it, closure=None)) == ""
    h = Harness()
    h.discover()
    h.claim()
    h.ok(Failure(**h.lease(), failure_class="x", message="y", retryable=False), S.FAILED)
    assert why(with_data(h.it, failure=None)) == ""


def test_the_lease_block_is_shown_while_an_item_is_claimed() -> None:
    h = Harness()
    h.to(S.OBSERVING)
    assert item_view(h.it)["lease"] is None
    item = h.claim()
    view = item_view(item)
    assert view["lease"] == {
        "owner": "w1",
        "token": item.lease_token,
        "expires_at": format_time(item.lease_expires_at),
    }
    assert view["fencing_token"] == item.lease_token
    unbounded = item_view(replace(item, lease_expires_at=None))["lease"]
    assert unbounded is not None and unbounded["expires_at"] is None


def test_a_revision_is_shown_with_its_fields() -> None:
    h = Harness()
    h.to(S.COMPLETED)
    assert item_view(h.it)["revision"] is None
    h.revise("a")
    revision = item_view(h.it)["revision"]
    assert revision["sequence"] == 1 and revision["state"] == h.it.doc("revision")["state"]
    assert revision["scope"] == ["a"] and revision["reason"] == "clearer writing"


def test_a_proposal_view_says_what_its_digest_covers_and_how_far_it_is() -> None:
    h = Harness(policy=policy(approvals=2))
    h.to_awaiting()
    h.approve("alice")
    proposal = item_view(h.it, h.actors)["proposal"]
    stored = h.it.doc("proposal")
    assert proposal["covers"] == sorted(k for k in stored if k not in ("digest", "approvals"))
    assert "digest" not in proposal["covers"] and "approvals" not in proposal["covers"]
    assert proposal["approvals_text"] == "1 of 2"
    assert proposal["outlook"]["given"] == ["alice"]
    assert "outlook" not in item_view(h.it)["proposal"]


def test_a_listing_row_of_a_record_that_fails_its_checks_says_so() -> None:
    h = Harness()
    h.to_awaiting()
    findings = [
        Finding("item", h.it.id, "proposal", "integrity_failed", "edited"),
        Finding("item", h.it.id, "data", "seal_mismatch", "edited"),
    ]
    row = summary_view(h.it, h.actors, findings)
    line = "integrity_failed: integrity_failed (proposal); close it, act on nothing in it"
    assert row["why"] == unsealed(findings) == line
    assert [c.split()[1] for c in row["next"]] == ["close"]
    assert row["integrity"]["ok"] is False and len(row["integrity"]["findings"]) == 2
    sound = summary_view(h.it, h.actors)
    assert sound["why"] == why(h.it, h.actors) and sound["integrity"]["ok"] is True


def test_an_event_is_shown_as_its_plain_form() -> None:
    h = Harness()
    h.to(S.OBSERVING)
    [event] = h.events
    view = event_view(event)
    assert view["hash"] == event.hash and view["command"] == "discover"
    assert view == thaw(freeze(event.to_plain()))


def test_an_artifact_is_shown_with_its_content_and_assets_by_fingerprint() -> None:
    logo = Asset("logo.png", "image/png", b"\x89PNG")
    h = Harness()
    h.to_completed([Artifact("a", "title a", "summary a", "body a", (logo,))])
    [shown] = item_view(h.it)["artifacts"]
    assert (shown["key"], shown["summary"], shown["body"]) == ("a", "summary a", "body a")
    assert shown["assets"] == [logo.fingerprint()]
    assert shown["readback_verified"] is True
