"""note through the command layer, on SQLite and on PostgreSQL: one sealed event in the ledger,
the state kept, a repeated key a zero-write, a reused key with another body refused, and
``verify`` clean afterwards."""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import T0, dump, stop_in_exception
from stopline.controller import IDEMPOTENT_REPLAY, Controller
from stopline.core.authorship import Author
from stopline.core.commands import Close, Note
from stopline.core.decision import Outcome
from stopline.core.policy import Policy
from stopline.core.reasons import Reason
from stopline.core.records import Item
from stopline.core.states import State
from stopline.store import Store, open_store
from stopline.verification import verify_store

AI = Author("ai", "helper-7", "example-family")


class Clock:
    def __init__(self) -> None:
        self.now = T0 + timedelta(minutes=5)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def setup(store: Store) -> tuple[Controller, Item]:
    item = stop_in_exception(store, "k1", T0)
    store.register_automation("auto", Policy(), T0)
    controller = Controller(store, Clock(), trust=None)
    controller.add_actor("olivia", ["operator"])
    controller.add_actor("alice", ["approver"])
    controller.add_actor("nora", ["auditor"])
    return controller, item


def test_a_note_is_one_sealed_event_and_verify_stays_clean(store: Store) -> None:
    controller, item = setup(store)
    decision = controller.run(item.id, Note("olivia", "checked the logs"), idempotency_key="n-1")
    assert decision.outcome is Outcome.APPLIED and decision.state is State.EXCEPTION
    after = store.get(item.id)
    assert after is not None and after.state is State.EXCEPTION and after.data == item.data
    event = store.history(item.id)[-1]
    assert (event.command, event.actor, event.detail["body"]) == (
        "note",
        "olivia",
        "checked the logs",
    )
    assert event.detail["author"] == {"kind": "human"}
    assert "idempotency" in event.digests and "seal" in event.digests
    assert [e.seq for e, _ in store.item_ledger(item.id)][-1] == event.seq  # a person's event
    report = verify_store(store)
    assert report.findings == [], report.findings


def test_a_repeated_key_writes_nothing_and_a_reused_one_is_refused(store: Store) -> None:
    controller, item = setup(store)
    note = Note("olivia", "first", author=AI)
    assert controller.run(item.id, note, idempotency_key="k").outcome is Outcome.APPLIED
    before = dump(store)
    again = controller.run(item.id, note, idempotency_key="k")
    assert again.outcome is Outcome.ZERO_WRITE and again.reasons == (IDEMPOTENT_REPLAY,)
    other = controller.run(item.id, Note("olivia", "second"), idempotency_key="k")
    assert other.outcome is Outcome.REFUSED
    assert other.reasons == (Reason.IDEMPOTENCY_KEY_REUSE,)
    as_human = controller.run(item.id, Note("olivia", "first"), idempotency_key="k")
    assert as_human.reasons == (Reason.IDEMPOTENCY_KEY_REUSE,)  # the author is bound too
    assert dump(store) == before
    event = store.history(item.id)[-1]
    assert event.detail["author"] == {"kind": "ai", "name": "helper-7", "family": "example-family"}
    assert verify_store(store).findings == []


def test_who_may_note_and_a_final_state(store: Store) -> None:
    """An approver may note; a viewer may not (nothing written); a closed item takes a note
    and stays closed."""
    controller, item = setup(store)
    assert controller.run(item.id, Note("alice", "an approver's view")).applied
    before = dump(store)
    refused = controller.run(item.id, Note("nora", "a viewer's view"))
    assert refused.reasons == (Reason.ACTOR_NOT_AUTHORIZED,)
    assert dump(store) == before
    assert controller.run(item.id, Close("olivia", "done")).state is State.CLOSED
    decision = controller.run(item.id, Note("olivia", "post-mortem linked"))
    assert decision.applied and decision.state is State.CLOSED
    found = store.get(item.id)
    assert found is not None and found.state is State.CLOSED
    assert verify_store(store).findings == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", None]), st.sampled_from(["x", "y", " "])),
        min_size=1,
        max_size=8,
    )
)
def test_notes_under_keys_write_once_per_key(calls: list[tuple[str | None, str]]) -> None:
    """Any run of notes under keys: each key writes at most once (its first valid body); a
    repeat is a zero-write, another body under it refused; the state never changes."""
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'notes.db'}")
        try:
            controller, item = setup(store)
            bound: dict[str, str] = {}
            written = 0
            for key, body in calls:
                decision = controller.run(item.id, Note("olivia", body), idempotency_key=key)
                if key is not None and key in bound:  # the key is looked up first
                    expect = Outcome.ZERO_WRITE if bound[key] == body else Outcome.REFUSED
                    assert decision.outcome is expect
                elif not body.strip():
                    assert decision.reasons == (Reason.INVALID_INPUT,)
                else:
                    assert decision.applied
                    written += 1
                    if key is not None:
                        bound[key] = body
            found = store.get(item.id)
            assert found is not None and found.state is State.EXCEPTION
            assert found.seq == item.seq + written
            assert verify_store(store).findings == []
        finally:
            store.close()


def test_an_idempotency_key_that_is_not_valid_text_is_refused_and_writes_nothing(
    store: Store,
) -> None:
    """A library caller's key holding a NUL or a lone surrogate (no text column takes it):
    the note is refused ``invalid_input`` before the key is looked up or bound, and nothing
    but the refusal's audit row is written; the same note under a valid key is applied."""
    controller, item = setup(store)
    before = dump(store)
    for key in ("k\x00", "k\ud800"):
        decision = controller.run(item.id, Note("olivia", "checked"), idempotency_key=key)
        assert (decision.outcome, decision.reasons) == (Outcome.REFUSED, (Reason.INVALID_INPUT,))
    assert dump(store) == before
    assert controller.run(item.id, Note("olivia", "checked"), idempotency_key="k").applied


def test_a_reference_or_an_actor_that_is_not_valid_text_is_refused_on_both_stores(
    store: Store,
) -> None:
    """A library caller's item reference or actor holding a NUL or a lone surrogate (which
    PostgreSQL's text columns refuse, and no id, key or registered name holds): no item, or
    no such actor, and only the refusal's audit row is written (its actor left empty)."""
    controller, item = setup(store)
    before = dump(store)
    unknown, invalid = Reason.UNKNOWN_ITEM, Reason.INVALID_INPUT
    # a lone surrogate has no canonical form: the command's digest refuses it first
    for bad, reason in (("k\x00", unknown), ("auto/k\x00", unknown), ("k\ud800", invalid)):
        assert controller.item(bad) is None
        decision = controller.run(bad, Note("olivia", "checked"))
        assert (decision.outcome, decision.reasons) == (Outcome.REFUSED, (reason,)), bad
    for bad, reason in (("oli\x00via", Reason.ACTOR_UNKNOWN), ("oli\ud800via", invalid)):
        decision = controller.run(item.id, Note(bad, "checked"))
        assert (decision.outcome, decision.reasons) == (Outcome.REFUSED, (reason,)), bad
    assert dump(store) == before
    assert controller.run(item.id, Note("olivia", "checked")).applied
