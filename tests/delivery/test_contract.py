"""The command contract of delivery and revision: exit codes, decision JSON, preparation, review.

Every test runs against both targets (a folder, and a real WsgiDAV server).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from stopline.core.canonical import digest

from .apps.digest_app import CONFIG_ENV, KEYS
from .conftest import APP, ITEM, Env

# the decision JSON; `explanation` and `details` were added beside the original five
DECISION_KEYS = {"decision", "reasons", "item", "state", "sequence", "explanation", "details"}


def program(env: Env, *args: str) -> tuple[int, dict[str, Any]]:
    """The real ``stopline`` program: exit status and its one JSON document."""
    done = env.sub(*args)
    doc = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, doc


def test_revise_finalize_review_reconcile_exit_codes_and_json(env: Env) -> None:
    """Applied and zero_write exit 0, refused 3, bad usage 2; each prints one decision document."""
    item = env.deliver()
    packet = item["review_packet"]["digest"]

    code, doc = program(env, "finalize", ITEM)
    assert (code, set(doc)) == (0, DECISION_KEYS)
    assert doc == {
        "decision": "zero_write",
        "reasons": ["already_completed"],
        "item": item["id"],
        "state": "completed",
        "sequence": None,
        "explanation": ["already_completed: the item is completed; nothing to do"],
        "details": {},
    }

    code, doc = program(
        env, "review", ITEM, "--packet", packet, "--verdict", "approve", "--actor", "olga"
    )
    assert (code, doc["decision"], doc["state"]) == (0, "applied", "completed")
    assert doc["sequence"] == env.show()["history_length"]

    code, doc = program(env, "reconcile", ITEM, "--artifact", "article-1", "--actor", "olga")
    assert (code, doc["decision"], doc["reasons"], doc["sequence"]) == (
        3,
        "refused",
        ["illegal_transition"],
        None,
    )

    code, doc = program(env, *env.revise())
    assert (code, set(doc), doc["decision"], doc["reasons"]) == (0, DECISION_KEYS, "applied", [])
    assert doc["state"] == "revision_prepared"
    assert doc["sequence"] == env.show()["history_length"]

    code, doc = program(env, "finalize", ITEM)
    assert (code, doc["decision"], doc["reasons"]) == (3, "refused", ["not_completed"])

    code, doc = program(
        env, "review", ITEM, "--packet", packet, "--verdict", "approve", "--actor", "olga"
    )
    assert (code, doc["decision"]) == (3, "refused")
    assert sorted(doc["reasons"]) == ["illegal_transition", "review_packet_stale"]

    for usage in (
        ["revise", ITEM, "--actor", "olga", "--reason", "x"],  # no --artifact
        ["revise", ITEM, "--actor", "olga", "--reason", " ", "--artifact", "article-1"],
        ["review", ITEM, "--packet", packet, "--verdict", "maybe", "--actor", "olga"],
        ["reconcile", ITEM, "--actor", "olga"],
    ):
        done = env.sub(*usage)
        assert done.returncode == 2, (usage, done.stdout, done.stderr)
    assert env.show()["state"] == "revision_prepared"


def test_preparation_binds_the_request_to_the_completed_source(env: Env) -> None:
    """revise records the request digest, a new sequence and the superseded hashes; keeps ids."""
    before = env.deliver()
    old_history = env.history()
    old = {a["key"]: a for a in before["artifacts"]}
    packet = before["review_packet"]
    calls = len(env.calls())

    env.applied(*env.revise(reason="tighter prose"), state="revision_prepared")
    after = env.show()
    revision = after["revision"]

    superseded = {
        k: {
            "content_hash": old[k]["content_hash"],
            "qa_hash": old[k]["qa_hash"],
            "remote_id": old[k]["remote_id"],
            "readback_hash": old[k]["readback_hash"],
        }
        for k in KEYS
    }
    expected = digest(
        {
            "item": before["id"],
            "reason": "tighter prose",
            "scope": sorted(KEYS),
            "source_seq": before["delivery_seq"],
            "superseded": superseded,
        }
    )
    assert revision["request_digest"] == expected
    assert (revision["sequence"], revision["source_seq"]) == (before["delivery_seq"] + 1, 0)
    assert after["delivery_seq"] == revision["sequence"]
    assert revision["superseded"] == superseded
    assert (revision["reason"], revision["scope"], revision["state"]) == (
        "tighter prose",
        sorted(KEYS),
        "revision_prepared",
    )
    assert after["review_packet"]["digest"] == packet["digest"]
    assert after["review_packet"]["void"] is True and packet["void"] is False
    assert {a["key"]: a["remote_id"] for a in after["artifacts"]} == {
        k: old[k]["remote_id"] for k in KEYS
    }
    history = env.history()
    assert history[: len(old_history)] == old_history  # the completed history stays readable
    assert len(history) == len(old_history) + 1
    last = history[-1]
    assert (last["command"], last["from_state"], last["to_state"], last["actor"]) == (
        "revise",
        "completed",
        "revision_prepared",
        "olga",
    )
    assert last["digests"]["request"] == expected
    assert last["digests"]["voided_packet"] == packet["digest"]
    assert len(env.calls()) == calls  # preparing a revision makes no remote call


def test_another_reason_makes_another_request_digest(env: Env) -> None:
    """The request digest covers the reason and the scope: other inputs, other digest."""
    env.deliver()
    env.applied(*env.revise(reason="one"), state="revision_prepared")
    first = env.show()["revision"]["request_digest"]
    env.configure(revise="none")
    env.work()
    assert env.show()["state"] == "revision_failed"
    env.refused(env.revise(reason="two"), ["request_mismatch"])
    env.refused(env.revise("article-1", reason="one"), ["request_mismatch"])
    assert env.show()["revision"]["request_digest"] == first


@pytest.mark.parametrize(
    ("actor", "reasons"),
    [("stranger", ["actor_unknown"]), ("vic", ["actor_not_authorized"])],
)
def test_revise_needs_a_known_operator(env: Env, actor: str, reasons: list[str]) -> None:
    """Only a known actor with the operator role may open a revision; zero writes otherwise."""
    env.deliver()
    env.refused(env.revise(actor=actor), reasons)


def test_mode_that_forbids_revision_refuses(env: Env) -> None:
    """A delivery policy that is not revisable refuses every revision, zero writes."""
    env.configure(revisable=False)
    env.deliver()
    env.refused(env.revise(), ["mode_forbids_revision"])


def test_a_second_revision_while_one_is_active_is_refused(env: Env) -> None:
    """No other revision may open while one is prepared (or failed)."""
    env.deliver()
    env.applied(*env.revise(), state="revision_prepared")
    env.refused(
        env.revise(reason="another"),
        ["illegal_transition", "not_completed", "revision_active"],
    )


def test_stale_review_is_refused_after_revise(env: Env) -> None:
    """A verdict on the packet a revision voided is refused review_packet_stale."""
    item = env.deliver()
    old = item["review_packet"]["digest"]
    review = env.applied("review", ITEM, "--packet", old, "--verdict", "approve", "--actor", "olga")
    shown = env.show()["review"]
    assert (shown["packet"], shown["delivery_seq"], shown["verdict"]) == (old, 0, "approve")
    assert env.history()[-1]["digests"]["packet"] == old
    assert review["state"] == "completed"

    env.applied(*env.revise(), state="revision_prepared")
    assert env.show()["review"] is None
    env.refused(
        ["review", ITEM, "--packet", old, "--verdict", "approve", "--actor", "olga"],
        ["illegal_transition", "review_packet_stale"],
    )
    env.work()
    revised = env.show()
    assert revised["state"] == "revision_completed"
    new = revised["review_packet"]
    assert new["digest"] != old and new["void"] is False and new["delivery_seq"] == 1
    env.refused(
        ["review", ITEM, "--packet", old, "--verdict", "approve", "--actor", "olga"],
        ["review_packet_stale"],
    )
    env.applied(
        "review",
        ITEM,
        "--packet",
        new["digest"],
        "--verdict",
        "reject",
        "--actor",
        "olga",
        "--reason",
        "still long",
    )
    shown = env.show()["review"]
    assert (shown["packet"], shown["delivery_seq"], shown["verdict"]) == (
        new["digest"],
        1,
        "reject",
    )


def test_review_packet_binds_content_qa_identity_and_readback(env: Env) -> None:
    """The packet names every artifact's hashes and remote id and the delivery head."""
    item = env.deliver()
    packet = item["review_packet"]
    assert packet["item"] == item["id"] and packet["delivery_seq"] == 0
    rows = {a["key"]: a for a in packet["artifacts"]}
    for a in item["artifacts"]:
        assert rows[a["key"]] == {
            "key": a["key"],
            "content_hash": a["content_hash"],
            "qa_hash": a["qa_hash"],
            "remote_id": a["remote_id"],
            "readback_hash": a["readback_hash"],
        }
        assert a["readback_hash"] == a["content_hash"]
    body = {k: v for k, v in packet.items() if k not in ("digest", "void")}
    assert packet["digest"] == digest(body)


def test_a_reject_verdict_needs_a_reason(env: Env) -> None:
    """review --verdict reject without a reason is refused, zero writes."""
    packet = env.deliver()["review_packet"]["digest"]
    env.refused(
        ["review", ITEM, "--packet", packet, "--verdict", "reject", "--actor", "olga"],
        ["invalid_input"],
    )


def test_publish_is_refused_in_draft_mode(env: Env) -> None:
    """Draft mode never publishes, even after an approved review; no remote call."""
    packet = env.deliver()["review_packet"]["digest"]
    env.applied("review", ITEM, "--packet", packet, "--verdict", "approve", "--actor", "olga")
    env.refused(
        ["publish", ITEM, "--packet", packet, "--actor", "pete"],
        ["mode_forbids_publication"],
    )


def test_publish_after_an_approved_review_records_the_signal(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mode publish: publishes only after an approved review; then revise is refused."""
    env.configure(mode="publish")
    monkeypatch.setenv(CONFIG_ENV, json.dumps(env.config))
    item = env.deliver()
    packet = item["review_packet"]["digest"]
    publish = ["publish", ITEM, "--packet", packet, "--actor", "pete", "--app", APP]

    env.refused(publish, ["review_not_approved"])
    env.applied(
        "review",
        ITEM,
        "--packet",
        packet,
        "--verdict",
        "reject",
        "--actor",
        "olga",
        "--reason",
        "no",
    )
    env.refused(publish, ["review_not_approved"])
    env.applied("review", ITEM, "--packet", packet, "--verdict", "approve", "--actor", "olga")
    env.refused([*publish[:5], "olga", *publish[6:]], ["actor_not_authorized"])

    env.applied(*publish, state="completed")
    shown = env.show()
    publication = shown["publication"]
    assert (publication["actor"], publication["packet"]) == ("pete", packet)
    signals = publication["signal"].split()
    assert len(signals) == len(KEYS)
    assert sorted(c["arg"] for c in env.calls("publish")) == sorted(
        a["remote_id"] for a in shown["artifacts"]
    )
    if env.site.kind == "directory":
        for a in shown["artifacts"]:
            assert (env.site.folder / a["remote_id"] / "published").is_file()
    else:
        for a in shown["artifacts"]:
            marker = a["remote_id"].removesuffix(".json") + ".published"
            assert (env.site.folder / marker).is_file()
            assert any(s.endswith(marker) for s in signals)
    assert env.history()[-1]["command"] == "publish"

    calls = len(env.calls())
    code, doc = env.cli(*publish)
    assert (code, doc["decision"], doc["reasons"]) == (0, "zero_write", ["published"])
    assert len(env.calls()) == calls
    env.refused(env.revise(), ["published"])
    assert env.assert_one_object_per_artifact()["state"] == "completed"


def test_revise_refuses_unbound_unverified_or_moved_sources(env: Env) -> None:
    """An unbound, unverified or review-moved source is refused with every failing reason."""
    from dataclasses import replace
    from types import MappingProxyType

    from stopline.core.commands import Revise
    from stopline.core.decide import decide
    from stopline.core.step import Context
    from stopline.store import open_store

    env.deliver()
    store = open_store(env.url)
    try:
        item = store.get(env.show()["id"])
        assert item is not None
        ctx = Context(item.updated_at, store.policy(item.automation), store.actors())
        revise = Revise(actor="olga", reason="r", artifacts=tuple(KEYS))
        assert decide(item, revise, ctx).applied

        records = [dict(a) for a in item.doc("artifacts")]
        records[0]["remote_id"] = None
        records[1]["readback_hash"] = None
        review = {"packet": "0" * 64, "verdict": "approve", "delivery_seq": 0}
        data = MappingProxyType({**item.data, "artifacts": records, "review": review})
        decision = decide(replace(item, data=data), revise, ctx)
        assert decision.outcome.value == "refused"
        assert sorted(decision.reasons) == [
            "artifact_not_bound",
            "readback_unverified",
            "review_head_moved",
        ]
    finally:
        store.close()


def test_a_role_written_into_the_actors_table_publishes_nothing(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """publish checks authority against the registry chain before any remote call: a publisher
    role written straight into the actors table (no registry event) is refused integrity_failed,
    and the target sees no publication."""
    env.configure(mode="publish")
    monkeypatch.setenv(CONFIG_ENV, json.dumps(env.config))
    packet = env.deliver()["review_packet"]["digest"]
    env.applied("review", ITEM, "--packet", packet, "--verdict", "approve", "--actor", "olga")
    with sqlite3.connect(env.db) as conn:
        conn.execute(
            "UPDATE actors SET roles = ? WHERE name = 'olga'",
            (json.dumps(["operator", "publisher", "reviewer"]),),
        )
    conn.close()
    env.refused(
        ["publish", ITEM, "--packet", packet, "--actor", "olga", "--app", APP],
        ["integrity_failed"],
    )
    assert env.calls("publish") == []
