"""What people's commands write into their events beyond the move (``core/operator.py``): the
approvals a close or reinspect voids, read off any record, and the digest of the report an
acknowledge closes. Each rule here was missing while a mutant of the module passed every
other test of the core."""

from __future__ import annotations

from typing import Any

import pytest

from stopline.core.commands import Acknowledge, Close, Reinspect
from stopline.core.decide import decide
from stopline.core.decision import Outcome
from stopline.core.states import State

from .helpers import Harness, policy, with_proposal

S = State


@pytest.mark.parametrize("source", [S.EXCEPTION, S.READY_FOR_REVIEW, S.EXHAUSTED])
def test_a_close_of_an_item_with_no_proposal_voids_no_approvals(h: Harness, source: State) -> None:
    """No proposal, no approval voided: the event says so with an empty list, never null."""
    h.to(source)
    assert h.it.doc("proposal") is None
    d = h.ok(Close("olivia", "not needed"), S.CLOSED)
    assert d.event is not None and d.event.detail["voided_approvals"] == ()


def test_a_reinspect_of_a_report_voids_no_approvals(h: Harness) -> None:
    h.to(S.READY_FOR_REVIEW)
    d = h.ok(Reinspect("olivia", "look again"), S.OBSERVING)
    assert d.event is not None and d.event.detail["voided_approvals"] == ()


def closed(approvals: Any) -> Any:
    """The detail of a close of an item awaiting approval whose ``approvals`` were edited
    behind the store into ``approvals``."""
    h = Harness(policy=policy(approvals=2))
    h.to_awaiting()
    h.approve("alice")
    item = with_proposal(h.it, approvals=approvals)
    d = decide(item, Close("olivia", "the record was edited"), h.ctx())
    assert d.outcome is Outcome.APPLIED and d.event is not None and d.state is S.CLOSED
    return d.event.detail["voided_approvals"]


def test_a_close_lists_only_the_approvals_that_name_an_actor() -> None:
    """Approvals edited into junk (no object, an actor that is no name) are left out of what
    the close voids; the close itself goes through."""
    junk = [{"actor": "alice", "digest": "x"}, "bob", 7, {"actor": 5}, {"actor": "carol"}]
    assert closed(junk) == ("alice", "carol")


@pytest.mark.parametrize("approvals", [None, 3, "alice", {"actor": "alice"}])
def test_a_close_of_approvals_that_are_no_list_voids_none(approvals: Any) -> None:
    assert closed(approvals) == ()


def test_an_acknowledge_binds_the_digest_of_the_report_it_closes(h: Harness) -> None:
    h.to(S.READY_FOR_REVIEW)
    report = h.it.doc("report")
    assert report["digest"]
    d = h.ok(Acknowledge("olivia", "read it"), S.CLOSED)
    assert d.event is not None and d.event.digests["report"] == report["digest"]
    assert d.event.detail["reason"] == "read it"
