"""decide() for ``stage`` (``core/staging.py``), the first durable boundary of a delivery and of
a revision: who may stage (the lease), where (delivering or a revision), what (unique, named
artifacts, each with passing QA), how often (once a round), and what the stage event and the
artifact records bind (content digests, idempotency keys).

Each test holds a rule that a mutant of ``core/staging.py`` dropped while every other core test
still passed."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from stopline.core.artifacts import Artifact
from stopline.core.commands import Guard, QAResult, Resolve, Stage
from stopline.core.reasons import Reason
from stopline.core.states import State

from .helpers import LEASE, Harness, art, bound_digests, passed, unchanged

S = State
A1, B1 = art("a", "alpha v1"), art("b", "beta v1")
A2 = art("a", "alpha v2")


def delivering(h: Harness) -> Harness:
    h.to_approved()
    h.execute()
    h.claim()
    assert h.state is S.DELIVERING
    return h


def revising(h: Harness) -> Harness:
    """A completed delivery of A1 and B1, a revision of ``a`` opened and claimed."""
    h.to_completed([A1, B1])
    h.revise("a")
    h.claim()
    return h


def stage(
    h: Harness, *artifacts: Artifact, worker: str | None = None, token: int | None = None
) -> Stage:
    lease = h.lease()
    return Stage(
        worker if worker is not None else lease["worker"],
        token if token is not None else lease["token"],
        artifacts=artifacts,
        qa=passed(*artifacts),
    )


def revision_failed_with(h: Harness, command: Stage, *reasons: str) -> None:
    d = h.ok(command, S.REVISION_FAILED)
    assert set(d.reasons) == set(reasons), d.reasons


# --- who, where ----------------------------------------------------------------------------------


@pytest.mark.parametrize("walk", [delivering, revising], ids=["delivering", "revision"])
@pytest.mark.parametrize("lease", ["other-worker", "stale-token", "expired"])
def test_a_stage_under_a_lease_that_is_not_the_current_one_is_refused(
    h: Harness, walk: Callable[[Harness], Harness], lease: str
) -> None:
    """Staging is a worker's commit: only the holder of the live lease, by its current token."""
    walk(h)
    if lease == "other-worker":
        command = stage(h, A2, worker="w9")
    elif lease == "stale-token":
        command = stage(h, A2, token=h.it.lease_token - 1)
    else:
        command = stage(h, A2)
        h.clock.advance((LEASE + timedelta(seconds=1)).total_seconds())
    h.refused(command, Reason.LEASE_LOST)  # nothing written: the item is as it was


@pytest.mark.parametrize(
    "walk",
    [
        lambda h: h.discover(),
        lambda h: (h.discover(), h.observe())[-1],
        lambda h: h.to_approved(),
        lambda h: h.to_pending_readback([A1]),
    ],
    ids=["observing", "classified", "approved", "pending_readback"],
)
def test_a_stage_outside_a_delivery_or_a_revision_is_illegal(
    h: Harness, walk: Callable[[Harness], object]
) -> None:
    """Under a live lease in another work state, a stage is illegal and writes nothing."""
    walk(h)
    h.claim()
    h.refused(stage(h, A1), Reason.ILLEGAL_TRANSITION)


# --- what --------------------------------------------------------------------------------------


def test_an_artifact_without_a_key_is_invalid_input(h: Harness) -> None:
    delivering(h)
    before = h.it
    d = h.stage([art("")])
    assert d.reasons == (Reason.INVALID_INPUT,) and unchanged(before, d)


def test_an_artifact_without_qa_fails_qa_in_a_delivery(h: Harness) -> None:
    """No QA result is no passing QA: the delivery stops in exception, naming the artifact."""
    delivering(h)
    d = h.stage([A1, B1], qa={"a": QAResult(True)})
    assert d.state is S.EXCEPTION and d.reasons == (Reason.QA_FAILED,)
    assert h.it.doc("exception")["evidence"] == {"failed": ("b",)}
    assert h.it.doc("artifacts") is None


@pytest.mark.parametrize(
    "qa", [{}, {"a": QAResult(False, {"why": "typo"})}], ids=["no-qa", "failed-qa"]
)
def test_revised_content_without_passing_qa_fails_the_revision(
    h: Harness, qa: dict[str, QAResult]
) -> None:
    revising(h)
    revision_failed_with(h, Stage(**h.lease(), artifacts=(A2,), qa=qa), Reason.QA_FAILED)


def test_a_revised_artifact_the_delivery_never_had_fails_the_revision(h: Harness) -> None:
    revising(h)
    revision_failed_with(h, stage(h, A2, art("zz")), Reason.SCOPE_INVALID)


# --- how often -------------------------------------------------------------------------------------


def test_a_revision_is_staged_once(h: Harness) -> None:
    revising(h)
    assert h.stage([A2]).state is S.REVISION_PREPARED
    before = h.it
    d = h.stage([art("a", "alpha v3")])
    assert d.reasons == (Reason.ALREADY_STAGED,) and unchanged(before, d)


# --- what it binds ---------------------------------------------------------------------------------


def test_the_revision_stage_binds_the_revised_content(h: Harness) -> None:
    """The stage event of a revision binds the new content of each artifact in its scope."""
    revising(h)
    d = h.stage([A2])
    assert bound_digests(d.event) == {"a": A2.content_hash}


def test_idempotency_keys_follow_the_delivery_round(h: Harness) -> None:
    """A delivery after a revision (delivery round 1) keeps the key of an object it already
    has and derives a new object's key from the item, the round and the artifact key."""
    h.to_completed([A1])
    assert h.it.doc("artifacts")[0]["idempotency_key"] == f"{h.item_id}:0:a"
    h.revise("a")
    h.claim()
    h.ok(Guard(**h.lease(), head=h.events[-2]), S.EXCEPTION)  # a record its head did not seal
    h.ok(Resolve("olivia", "start over", {}), S.OBSERVING)
    h.observe()
    h.propose()
    h.approve("alice")
    h.execute()
    h.claim()
    assert h.it.doc("delivery_seq") == 1
    assert h.stage([A2, B1]).state is S.DELIVERING
    keys = {r["key"]: r["idempotency_key"] for r in h.it.doc("artifacts")}
    assert keys == {"a": f"{h.item_id}:0:a", "b": f"{h.item_id}:1:b"}
