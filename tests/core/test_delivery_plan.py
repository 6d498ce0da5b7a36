"""The next remote write, planned from the item alone (core/delivery_plan.py), on items the real
commands made: which artifact, create or update, and look first after a lost outcome."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from stopline.core.artifacts import Artifact
from stopline.core.commands import Bind, Intent, Revise
from stopline.core.delivery_plan import CREATE, UPDATE, keys_to_write, next_write, staged
from stopline.core.frozen import freeze
from stopline.core.records import Item
from stopline.core.states import State

from .helpers import T0, Harness, art, rid


def staged_delivery(h: Harness, *keys: str) -> Item:
    """An approved item executed and staged with artifacts ``keys`` (nothing written yet)."""
    h.to_approved()
    h.execute()
    h.claim()
    h.stage([art(k) for k in keys])
    return h.it


def intent(h: Harness, key: str, operation: str = CREATE) -> None:
    h.ok(Intent(**h.lease(), key=key, operation=operation, idempotency_key=f"ik-{key}"))


def bind(h: Harness, key: str, operation: str = CREATE) -> None:
    h.ok(Bind(**h.lease(), key=key, operation=operation, remote_id=rid(key), remote_version="v1"))


def test_a_staged_delivery_creates_each_artifact_in_key_order_recording_an_intent_first(
    h: Harness,
) -> None:
    """Nothing written: create the first key, with an intent first and no lookup."""
    item = staged_delivery(h, "b", "a")
    assert staged(item) and keys_to_write(item) == ["a", "b"]
    planned = next_write(item)
    assert planned is not None
    assert (planned.key, planned.operation, planned.look_first) == ("a", CREATE, False)
    assert planned.record_intent and planned.remote_id is None
    assert planned.idempotency_key == f"{item.id}:0:a"
    assert Artifact.from_plain(planned.content) == art("a")


def test_a_create_whose_intent_was_recorded_is_looked_up_first_without_a_new_intent(
    h: Harness,
) -> None:
    """An intent without a binding: the create may have landed; find it by its key first."""
    staged_delivery(h, "a", "b")
    intent(h, "a")
    planned = next_write(h.it)
    assert planned is not None
    assert (planned.key, planned.operation, planned.look_first) == ("a", CREATE, True)
    assert not planned.record_intent


def test_bound_artifacts_are_done_and_the_plan_moves_on_then_ends(h: Harness) -> None:
    """Each bound artifact is written; after the last one there is nothing to write."""
    staged_delivery(h, "a", "b")
    intent(h, "a")
    bind(h, "a")
    planned = next_write(h.it)
    assert planned is not None and (planned.key, planned.look_first) == ("b", False)
    intent(h, "b")
    bind(h, "b", "found")
    assert next_write(h.it) is None


def test_a_revision_updates_only_its_scope_on_the_bound_objects(h: Harness) -> None:
    """A revision writes the artifacts in scope, by update, conditional on the bound version."""
    h.to_completed([art("a"), art("b")])
    h.ok(Revise("olivia", "clearer", ("b",)), State.REVISION_PREPARED)
    item = h.it
    assert not staged(item) and keys_to_write(item) == ["b"]
    planned = next_write(item)
    assert planned is not None
    assert (planned.key, planned.operation, planned.remote_id) == ("b", UPDATE, rid("b"))
    assert planned.remote_version == "v2" and planned.record_intent


def test_an_update_intent_of_this_sequence_reads_first_an_older_one_does_not(h: Harness) -> None:
    """An update intent recorded in this delivery sequence: the update may have landed, so
    read first; an intent left from an earlier sequence is recorded afresh."""
    h.to_completed([art("a")])
    h.ok(Revise("olivia", "clearer", ("a",)), State.REVISION_PREPARED)
    h.claim()
    h.stage([art("a", "revised body")])
    intent(h, "a", UPDATE)
    planned = next_write(h.it)
    assert planned is not None and (planned.operation, planned.look_first) == (UPDATE, True)
    records = [dict(r) for r in h.it.doc("artifacts")]
    records[0]["intent"] = {**records[0]["intent"], "delivery_seq": 0}
    older = replace(h.it, data=freeze({**h.it.data, "artifacts": records}))
    planned = next_write(older)
    assert planned is not None and (planned.operation, planned.look_first) == (UPDATE, False)


def _record(key: str, remote_id: str | None, last_op: str | None, intent: Any) -> dict[str, Any]:
    return {
        "key": key,
        "idempotency_key": f"ik-{key}",
        "content": {"key": key},
        "remote_id": remote_id,
        "remote_version": "v1" if remote_id else None,
        "last_op": last_op,
        "intent": intent,
    }


RECORDS = st.lists(
    st.tuples(
        st.booleans(),  # bound to a remote object
        st.sampled_from([None, CREATE, UPDATE, "found"]),  # last operation
        st.sampled_from([None, CREATE, UPDATE]),  # intent recorded
        st.sampled_from([0, 1]),  # the intent's delivery sequence
    ),
    max_size=6,
)


@given(RECORDS)
def test_the_plan_is_the_first_unwritten_artifact_and_its_call_follows_its_binding(
    shapes: list[tuple[bool, str | None, str | None, int]],
) -> None:
    """For any delivering item: the plan is the first key not both bound and operated on;
    create when unbound (looking first iff an intent exists), else update (reading first iff
    an update intent of this sequence exists)."""
    records = [
        _record(
            f"k{n}",
            f"r{n}" if bound else None,
            last_op,
            None if op is None else {"operation": op, "delivery_seq": seq},
        )
        for n, (bound, last_op, op, seq) in enumerate(shapes)
    ]
    item = Item(
        id="i",
        automation="a",
        key="k",
        state=State.DELIVERING,
        version=1,
        seq=1,
        head="",
        created_at=T0,
        updated_at=T0,
        attempts=1,
        max_attempts=3,
        next_eligible_at=T0,
        data=freeze({"artifacts": records, "staged": True, "delivery_seq": 1}),
    )
    pending = [r for r in records if not (r["remote_id"] and r["last_op"])]
    planned = next_write(item)
    if not pending:
        assert planned is None
        return
    first = pending[0]
    assert planned is not None and planned.key == first["key"]
    intent = first["intent"]
    if first["remote_id"] is None:
        assert planned.operation == CREATE
        assert planned.look_first == (intent is not None)
    else:
        assert planned.operation == UPDATE and planned.remote_id == first["remote_id"]
        this_sequence = intent is not None and intent == {"operation": UPDATE, "delivery_seq": 1}
        assert planned.look_first == this_sequence
    assert planned.record_intent != planned.look_first
