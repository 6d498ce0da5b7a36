"""The one commit path (runtime/commit.py) on both stores: what it writes and what it says."""

from __future__ import annotations

from datetime import timedelta
from typing import cast

import pytest

from helpers import T0, count, decide_at, dump
from stopline.core.commands import Discover, Observe
from stopline.core.decision import Decision, refused, zero_write
from stopline.core.reasons import Reason
from stopline.core.records import Item
from stopline.runtime.commit import Committed, commit, reading_back
from stopline.store import Store


def discovery(item_id: str, key: str = "k1") -> Decision:
    return decide_at(None, Discover(item_id, "auto", key, {}), T0)


def test_a_new_item_is_inserted_and_a_second_discovery_of_its_key_loses(store: Store) -> None:
    """A discovery is applied; the same key discovered again (another id) loses, unwritten."""
    first = commit(store, discovery("i1"), command="discover", actor="scheduler", now=T0)
    assert first.status is Committed.APPLIED and store.get("i1") == first.decision.after
    before = dump(store)
    second = commit(store, discovery("i2"), command="discover", actor="scheduler", now=T0)
    assert second.status is Committed.LOST
    assert dump(store) == before and count(store, "refusals") == 0


def test_an_applied_decision_wins_the_compare_and_set_once(store: Store) -> None:
    """Two decisions made from one version: the first is applied, the second lost."""
    commit(store, discovery("i1"), command="discover", actor="scheduler", now=T0)
    claimed = store.claim("w1", T0, 30)
    assert claimed is not None
    decisions = [
        decide_at(claimed, Observe("w1", claimed.lease_token, {"n": n}, T0), T0) for n in (1, 2)
    ]
    statuses = [commit(store, d, command="observe", actor="w1", now=T0).status for d in decisions]
    assert statuses == [Committed.APPLIED, Committed.LOST]
    assert store.get("i1") == decisions[0].after


def test_a_refusal_writes_its_audit_row_and_nothing_else(store: Store) -> None:
    """refused: one refusal row, no other change; zero_write: nothing at all."""
    commit(store, discovery("i1"), command="discover", actor="scheduler", now=T0)
    item = store.get("i1")
    assert item is not None
    before = dump(store)
    done = commit(
        store,
        refused(item, [Reason.LEASE_LOST]),
        command="observe",
        actor="w9",
        now=T0 + timedelta(seconds=1),
    )
    assert done.status is Committed.REFUSED and count(store, "refusals") == 1
    assert dump(store) == before
    quiet = commit(store, zero_write(item, []), command="guard", actor="w9", now=T0)
    assert quiet.status is Committed.ZERO_WRITE
    assert dump(store) == before and count(store, "refusals") == 1


def test_a_writer_that_saw_nothing_written_says_cut_off(store: Store) -> None:
    """A writer answering None (it read back an unchanged item) makes the commit cut_off."""
    done = commit(
        store, discovery("i1"), command="discover", actor="s", now=T0, write=lambda d: None
    )
    assert done.status is Committed.CUT_OFF and store.get("i1") is None


class ReplyLost(ConnectionError):
    """The database went away before the commit's answer came back."""


def observed(store: Store) -> tuple[Decision, Decision]:
    """Two decisions made from one claimed version of a new item."""
    commit(store, discovery("i1"), command="discover", actor="scheduler", now=T0)
    claimed = store.claim("w1", T0, 30)
    assert claimed is not None
    first, second = (
        decide_at(claimed, Observe("w1", claimed.lease_token, {"n": n}, T0), T0) for n in (1, 2)
    )
    return first, second


def test_a_commit_whose_answer_was_lost_is_read_back_for_what_happened(store: Store) -> None:
    """The database goes away before a commit's answer: the item read back says whether this
    decision was written (its event is the head), nothing was (the version unchanged), or
    another write came first."""

    def written_then_lost(decision: Decision) -> bool:
        store.apply(decision)
        raise ReplyLost("the answer never came")

    def lost_before_writing(decision: Decision) -> bool:
        raise ReplyLost("the statement never arrived")

    first, second = observed(store)
    assert reading_back(store, lost_before_writing, (ReplyLost,), first) is None
    assert reading_back(store, written_then_lost, (ReplyLost,), first) is True
    assert store.get("i1") == first.after
    assert reading_back(store, lost_before_writing, (ReplyLost,), second) is False


class AwayFor:
    """The store, whose reads fail ``times`` times first (the database not back yet)."""

    def __init__(self, store: Store, times: int) -> None:
        self.store, self.left, self.reads = store, times, 0

    def get(self, item_id: str) -> Item | None:
        self.reads += 1
        if self.left:
            self.left -= 1
            raise ReplyLost("not back yet")
        return self.store.get(item_id)


def test_a_read_back_waits_for_the_database_to_answer_again(store: Store) -> None:
    """The database is still away for the first reads back: the worker reads again until it
    answers, and only then says what happened (not the first error it met)."""

    def written_then_lost(decision: Decision) -> bool:
        store.apply(decision)
        raise ReplyLost("the answer never came")

    first, _ = observed(store)
    away = AwayFor(store, times=2)
    assert reading_back(cast(Store, away), written_then_lost, (ReplyLost,), first) is True
    assert away.reads == 3


def test_a_read_back_gives_up_when_the_database_stays_away(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its time the read back raises what the database said: the worker's loop then
    applies its reconnect rules, and nothing is taken as written."""

    def lost_before_writing(decision: Decision) -> bool:
        raise ReplyLost("the statement never arrived")

    monkeypatch.setattr("stopline.runtime.commit.REREAD_FOR", 0.0)
    first, _ = observed(store)
    away = AwayFor(store, times=1_000)
    with pytest.raises(ReplyLost, match="not back yet"):
        reading_back(cast(Store, away), lost_before_writing, (ReplyLost,), first)
    assert away.reads < 1_000 and store.get("i1") == first.before
