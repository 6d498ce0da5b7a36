"""The revision lifecycle of seed 000 end to end, against both targets.

Preserved identities, changed-hash requirements, update readbacks, same-request recovery,
rejection of unrelated changes, the missing-identity stop, and reconciliation that never creates.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from stopline.core.artifacts import Artifact
from stopline.targets.base import RemoteRef

from .apps.digest_app import CONFIG_ENV, KEYS
from .conftest import APP, ITEM, Env
from .proxies import SwapsIdentity, Tampering


def by_key(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["key"]: a for a in item["artifacts"]}


def failure(env: Env) -> dict[str, Any]:
    item = env.show()
    assert item["state"] == "revision_failed", item["state"]
    found: dict[str, Any] = item["revision"]["failure"]
    assert env.history()[-1]["reasons"] == found["reasons"]
    return found


def test_revision_updates_every_object_in_place(env: Env) -> None:
    """Both drafts are rewritten by update of the bound objects: same ids, one object each."""
    before = by_key(env.deliver())
    delivered = len(env.calls())
    env.applied(*env.revise(), state="revision_prepared")
    env.work()
    item = env.assert_one_object_per_artifact()
    assert item["state"] == "revision_completed"
    after = by_key(item)
    for key in KEYS:
        assert after[key]["remote_id"] == before[key]["remote_id"]
        assert after[key]["content_hash"] != before[key]["content_hash"]
        assert after[key]["qa_hash"] != before[key]["qa_hash"]
        assert after[key]["readback_hash"] == after[key]["content_hash"]
        assert after[key]["last_op"] == "update"
        assert "Revised because: clearer wording." in after[key]["body"]
    ops = [c["op"] for c in env.calls()[delivered:]]
    assert sorted(ops) == ["read", "read", "update", "update"]
    binds = [
        e
        for e in env.history()
        if e["command"] == "bind" and e["from_state"] == "revision_prepared"
    ]
    assert sorted(e["detail"]["operation"] for e in binds) == ["update", "update"]
    packet = item["review_packet"]
    assert packet["delivery_seq"] == 1 and packet["void"] is False
    assert {a["key"]: a["content_hash"] for a in packet["artifacts"]} == {
        k: after[k]["content_hash"] for k in KEYS
    }
    assert item["revision"]["state"] == "revision_completed"
    env.verify_clean()


def test_revision_of_one_artifact_leaves_the_other_untouched(env: Env) -> None:
    """A scope of one artifact updates that object only; the packet still names both."""
    before = by_key(env.deliver())
    other = before["article-2"]["remote_id"]
    untouched = {k: v for k, v in env.site.snapshot().items() if k.startswith(other)}
    env.applied(*env.revise("article-1"), state="revision_prepared")
    env.work()
    item = env.assert_one_object_per_artifact()
    assert item["state"] == "revision_completed"
    after = by_key(item)
    assert after["article-2"] == before["article-2"]
    assert after["article-1"]["content_hash"] != before["article-1"]["content_hash"]
    assert {k: v for k, v in env.site.snapshot().items() if k.startswith(other)} == untouched
    assert [c["arg"] for c in env.calls("update")] == [before["article-1"]["remote_id"]]
    assert len(item["review_packet"]["artifacts"]) == 2


@pytest.mark.parametrize("behaviour", ["none", "first"])
def test_revision_must_change_every_artifact_in_scope(env: Env, behaviour: str) -> None:
    """Unchanged content, or only one member of the pair changed: revision_failed, no write."""
    env.deliver()
    env.applied(*env.revise(), state="revision_prepared")
    snapshot, calls = env.site.snapshot(), len(env.calls())
    env.configure(revise=behaviour)
    env.work()
    found = failure(env)
    assert set(found["reasons"]) == {"content_unchanged", "qa_unchanged"}
    assert env.site.snapshot() == snapshot
    assert len(env.calls()) == calls  # the gate fails before any remote call
    env.assert_one_object_per_artifact()


@pytest.mark.parametrize("behaviour", ["all", "extra"])
def test_revised_content_outside_the_scope_is_refused(env: Env, behaviour: str) -> None:
    """A revise hook that changes an artifact outside the scope, or adds one: scope_invalid."""
    env.deliver()
    env.applied(*env.revise("article-1"), state="revision_prepared")
    snapshot, calls = env.site.snapshot(), len(env.calls())
    env.configure(revise=behaviour)
    env.work()
    assert "scope_invalid" in failure(env)["reasons"]
    assert env.site.snapshot() == snapshot and len(env.calls()) == calls


@pytest.mark.parametrize(
    "scope",
    [
        ["settings"],
        ["target"],
        ["delivery.mode"],
        ["digest/w2"],
        ["w2:article-1"],
        ["article-3"],
        ["article-1", "settings"],
        ["article-1", "article-1"],
    ],
)
def test_a_scope_naming_anything_but_this_deliverys_artifacts_is_refused(
    env: Env, scope: list[str]
) -> None:
    """Settings, targets, other items, unknown keys: refused scope_invalid, zero writes."""
    env.configure(keys=["w1", "w2"])
    env.deliver()
    assert env.show("digest/w2")["state"] == "completed"
    env.refused(env.revise(*scope), ["scope_invalid"])


def test_a_target_that_stores_something_else_fails_the_revision(env: Env) -> None:
    """An update whose readback differs from what was sent: revision_failed readback_mismatch."""
    env.deliver()
    env.applied(*env.revise(), state="revision_prepared")
    env.work(wrap=Tampering)
    found = failure(env)
    assert "readback_mismatch" in found["reasons"]
    assert found["mismatches"]["article-1"]["fields"] == ["body"]
    item = env.show()
    for record in item["artifacts"]:
        back = env.site.target().read(record["remote_id"])
        assert back.body.endswith("[edited by the target]")
        assert back.readback_hash != record["content_hash"]
        assert record["readback_hash"] != record["content_hash"]
    assert len(env.site.objects()) == 2


def test_an_update_that_answers_another_identity_ends_the_step(env: Env) -> None:
    """A target whose update answers another object's identity (and stores something else):
    the core refuses to bind it (a revision never swaps identity), and the refused boundary
    ends the step: no further write follows it in that attempt, the bound identities stay."""
    before = by_key(env.deliver())
    env.applied(*env.revise(), state="revision_prepared")
    swapping: list[SwapsIdentity] = []

    def wrap(target: Any) -> Any:
        swapping.append(SwapsIdentity(target))
        return swapping[-1]

    env.work(wrap=wrap)
    assert [proxy.updates for proxy in swapping] == [1]
    item = env.show()
    assert item["state"] == "revision_prepared"
    assert {k: a["remote_id"] for k, a in by_key(item).items()} == {
        k: a["remote_id"] for k, a in before.items()
    }
    assert not [
        e
        for e in env.history()
        if e["command"] == "bind" and e["from_state"] == "revision_prepared"
    ]


def test_resuming_after_a_readback_mismatch_writes_the_revised_content_again(env: Env) -> None:
    """The resumed request updates the objects whose readback differed, in place, and completes."""
    before = by_key(env.deliver())
    env.applied(*env.revise(), state="revision_prepared")
    env.work(wrap=Tampering)
    failure(env)
    env.refused(env.revise(reason="another request"), ["request_mismatch"])  # marks nothing
    updates = len(env.calls("update"))
    resumed = env.applied(*env.revise(), state="revision_prepared")
    assert resumed["state"] == "revision_prepared"
    assert env.history()[-1]["detail"]["rewrite"] == sorted(KEYS)
    env.work()
    item = env.assert_one_object_per_artifact()
    assert item["state"] == "revision_completed"
    assert len(env.calls("update")) == updates + 2  # one more update of each object, no create
    after = by_key(item)
    for key in KEYS:
        assert after[key]["remote_id"] == before[key]["remote_id"]
        back = env.site.target().read(after[key]["remote_id"])
        assert back.readback_hash == after[key]["content_hash"] == after[key]["readback_hash"]
        assert "[edited by the target]" not in back.body
    env.verify_clean()


def test_a_resumed_revision_never_overwrites_a_third_partys_later_edit(env: Env) -> None:
    """After the mismatch someone edits an object: the resume stops on the version, edit intact."""
    env.deliver()
    env.applied(*env.revise(), state="revision_prepared")
    env.work(wrap=Tampering)
    failure(env)
    record = by_key(env.show())["article-1"]
    target = env.site.target()
    seen = target.read(record["remote_id"])
    edit = Artifact("article-1", "Edited by hand", "by a person", "a person's own words")
    target.update(RemoteRef(record["remote_id"], seen.version), edit)
    env.applied(*env.revise(), state="revision_prepared")
    env.work()
    found = failure(env)
    assert found["reasons"] == ["remote_version_conflict"]
    assert target.read(record["remote_id"]).readback_hash == edit.content_hash
    assert len(env.site.objects()) == 2
    env.verify_clean()


def test_a_target_that_stores_something_else_stops_the_delivery(env: Env) -> None:
    """A created object whose readback differs is not completed: exception readback_mismatch."""
    env.work(wrap=lambda t: Tampering(t, ("create",)))
    item = env.show()
    assert item["state"] == "exception"
    assert env.history()[-1]["reasons"] == ["readback_mismatch"]
    assert sorted(item["exception"]["evidence"]) == sorted(KEYS)
    assert item["review_packet"] is None
    env.refused(["finalize", ITEM], ["not_completed"])


def test_an_object_gone_before_its_readback_is_evidence_not_a_failed_read(env: Env) -> None:
    """Delivered, then one object removed behind stopline's back before the readback: the
    other is still read, and the core stops the item at ``exception`` saying which object is
    missing (``remote_identity_missing``), where a failed read would say nothing of them."""
    done = env.work_cli(crash="delivered")
    assert done.returncode == 137, done.stderr
    item = env.show()
    assert item["state"] == "pending_readback"
    gone = by_key(item)["article-2"]["remote_id"]
    env.site.hide(gone)
    env.expire_leases()
    env.work()
    item = env.show()
    assert item["state"] == "exception"
    last = env.history()[-1]
    assert (last["command"], last["reasons"]) == ("needs_eyes", ["remote_identity_missing"])
    assert last["detail"]["mismatches"] == {"article-2": {"missing": True}}
    assert item["exception"]["evidence"] == {"article-2": {"missing": True}}
    reads = [c["arg"] for c in env.calls("read")]
    assert set(reads[-2:]) == {a["remote_id"] for a in item["artifacts"]}


def test_same_request_resumes_and_a_new_request_opens_the_next_sequence(env: Env) -> None:
    """revision_failed resumes only with the same request; after completion a new one opens."""
    before = by_key(env.deliver())
    env.applied(*env.revise(reason="shorter"), state="revision_prepared")
    request = env.show()["revision"]["request_digest"]
    env.configure(revise="none")
    env.work()
    failure(env)

    env.refused(env.revise(reason="longer"), ["request_mismatch"])
    env.refused(env.revise("article-2", reason="shorter"), ["request_mismatch"])
    env.refused(env.revise(reason="shorter", actor="vic"), ["actor_not_authorized"])

    env.configure(revise="scope")
    env.applied(*env.revise(reason="shorter"), state="revision_prepared")
    resumed = env.show()["revision"]
    assert (resumed["request_digest"], resumed["sequence"]) == (request, 1)
    env.work()
    first = env.assert_one_object_per_artifact()
    assert first["state"] == "revision_completed"

    env.applied(*env.revise("article-2", reason="friendlier"), state="revision_prepared")
    second = env.show()["revision"]
    assert (second["sequence"], second["source_seq"]) == (2, 1)
    assert second["request_digest"] != request
    assert (
        second["superseded"]["article-2"]["content_hash"]
        == by_key(first)["article-2"]["content_hash"]
    )
    env.work()
    item = env.assert_one_object_per_artifact()
    assert (item["state"], item["delivery_seq"], item["review_packet"]["delivery_seq"]) == (
        "revision_completed",
        2,
        2,
    )
    assert {k: a["remote_id"] for k, a in by_key(item).items()} == {
        k: a["remote_id"] for k, a in before.items()
    }
    assert "Revised because: friendlier." in by_key(item)["article-2"]["body"]
    assert "friendlier" not in by_key(item)["article-1"]["body"]
    env.verify_clean()


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("fail", "RuntimeError: the revise hook failed"),
        ("answer-fail", "the editor refused the change"),
        ("answer-retry", "the editor is away"),
        ("answer-eyes", "the change needs legal's eyes"),
        ("not-artifacts", "the revise hook returned list, not a list of artifacts"),
    ],
)
def test_a_revise_hook_without_artifacts_fails_the_revision(
    env: Env, behaviour: str, message: str
) -> None:
    """A revise hook that raises, answers an outcome (even ``RetryLater``: a revision is not
    retried on its own) or a list of anything but artifacts: revision_failed with what it
    said, nothing written to the target, and no remote call at all."""
    env.deliver()
    snapshot, calls = env.site.snapshot(), len(env.calls())
    env.applied(*env.revise(), state="revision_prepared")
    env.configure(revise=behaviour)
    env.work()
    found = failure(env)
    assert found["reasons"] == ["revise_hook"]
    assert message in json.dumps(found), found
    assert env.site.snapshot() == snapshot
    assert len(env.calls()) == calls


def test_a_missing_object_stops_the_revision_and_reconcile_never_creates(env: Env) -> None:
    """A vanished object stops the revision; reconcile binds it once back, never creates."""
    before = by_key(env.deliver())
    first, second = before["article-1"]["remote_id"], before["article-2"]["remote_id"]
    env.site.hide(second)

    env.applied(*env.revise(), state="revision_prepared")
    env.work()
    assert failure(env)["reasons"] == ["remote_identity_missing"]
    assert env.site.objects() == [first]
    assert len(env.calls("create")) == 2  # the two of the first delivery, no more

    reconcile = ["reconcile", ITEM, "--artifact", "article-2", "--actor", "olga"]
    env.refused(reconcile, ["remote_identity_missing"])
    assert env.site.objects() == [first]

    env.applied(*env.revise(), state="revision_prepared")  # resuming does not recreate either
    env.work()
    assert failure(env)["reasons"] == ["remote_identity_missing"]
    assert env.site.objects() == [first]
    assert len(env.calls("create")) == 2

    env.site.restore(second)
    done = env.applied(*reconcile, state="revision_failed")
    event = env.history()[-1]
    assert (event["command"], event["actor"], event["seq"]) == (
        "reconcile",
        "olga",
        done["sequence"],
    )
    assert event["detail"] == {
        "key": "article-2",
        "remote_id": second,
        "matches_current": False,
        "author": {"kind": "human"},  # every event records who wrote it
    }
    assert env.site.objects() == sorted([first, second])
    assert by_key(env.show())["article-2"]["remote_id"] == second

    env.applied(*env.revise(), state="revision_prepared")
    env.work()
    item = env.assert_one_object_per_artifact()
    assert item["state"] == "revision_completed"
    assert {k: a["remote_id"] for k, a in by_key(item).items()} == {
        "article-1": first,
        "article-2": second,
    }
    assert len(env.calls("create")) == 2
    env.verify_clean()


def test_reconcile_refuses_an_object_with_other_content(env: Env) -> None:
    """A found object with neither the current nor the superseded content is not bound."""
    before = by_key(env.deliver())
    second = before["article-2"]["remote_id"]
    env.applied(*env.revise(), state="revision_prepared")
    target = env.site.target()
    stranger = Artifact("article-2", "someone else's", "edit", "a body nobody at stopline wrote")
    found = target.find(before["article-2"]["intent"]["idempotency_key"])
    assert found is not None and found.remote_id == second
    target.update(found, stranger)  # someone else edits the draft behind stopline's back
    env.work()
    assert "remote_version_conflict" in failure(env)["reasons"]
    refused = env.refused(
        ["reconcile", ITEM, "--artifact", "article-2", "--actor", "olga"],
        ["readback_mismatch"],
    )
    assert refused["details"]["fields"] == ["title", "summary", "body", "assets"]
    assert "differs in title, summary, body, assets;" in refused["explanation"][0]
    assert env.site.objects() == sorted(a["remote_id"] for a in before.values())
    assert second in env.site.objects()


@pytest.mark.parametrize(
    ("args", "reasons"),
    [
        (["--artifact", "article-1", "--actor", "olga"], ["illegal_transition"]),
        (
            ["--artifact", "article-1", "--actor", "vic"],
            ["illegal_transition", "actor_not_authorized"],
        ),
        (["--artifact", "nope", "--actor", "olga"], ["illegal_transition", "scope_invalid"]),
    ],
)
def test_reconcile_of_a_completed_item_is_refused_without_a_lookup(
    env: Env, args: list[str], reasons: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """reconcile is for stopped deliveries; refused before any remote call, zero writes."""
    env.deliver()
    monkeypatch.setenv(CONFIG_ENV, json.dumps(env.config))  # --app: calls are recorded
    env.refused(["reconcile", ITEM, *args, "--app", APP], reasons)
