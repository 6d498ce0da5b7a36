"""`stopline note` and the author flags: a comment in the history, nothing else changed; the
author recorded and shown; malformed input exit 2 with nothing written."""

from __future__ import annotations

import pytest

from helpers import dump
from stopline.store import open_store

from .test_cli import demo_db, run, run_json  # noqa: F401  (demo_db is a fixture)

ITEM = "service-health/search"  # ready_for_review in the demo
AI = ("--author-kind", "ai", "--author-name", "helper-7", "--author-family", "example-family")


def snapshot(url: str) -> object:
    store = open_store(url)
    try:
        return dump(store)
    finally:
        store.close()


def test_a_note_is_recorded_with_its_author_and_shown(
    demo_db: str,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, before = run_json(capsys, "show", ITEM, "--db", demo_db)
    code, doc = run_json(
        capsys, "note", ITEM, "--db", demo_db, "--actor", "carol", "--body", "logs look fine", *AI
    )
    assert code == 0 and doc["decision"] == "applied" and doc["state"] == "ready_for_review"
    _, after = run_json(capsys, "show", ITEM, "--db", demo_db)
    moved = {"history_length", "version", "head", "notes"}
    assert {k: v for k, v in after.items() if k not in moved} == {
        k: v for k, v in before.items() if k not in moved
    }
    assert after["history_length"] == before["history_length"] + 1
    assert after["notes"] == [
        {
            "sequence": doc["sequence"],
            "at": after["notes"][0]["at"],
            "actor": "carol",
            "author": {"kind": "ai", "name": "helper-7", "family": "example-family"},
            "body": "logs look fine",
        }
    ]
    _, text = run(capsys, "show", ITEM, "--db", demo_db)
    assert "by carol (ai helper-7 (example-family))" in text and "logs look fine" in text
    _, history = run_json(capsys, "history", ITEM, "--db", demo_db)
    authors = [e["detail"].get("author") for e in history["events"]]
    assert authors[:-1] == [{"kind": "automation"}] * (len(authors) - 1)
    assert authors[-1]["kind"] == "ai"
    _, text = run(capsys, "history", ITEM, "--db", demo_db)
    assert "AUTHOR" in text and "ai helper-7 (example-family)" in text
    assert f"\nnotes:\n  {doc['sequence']}: carol: logs look fine" in text  # the body, in full
    code, _ = run(capsys, "verify", "--db", demo_db)
    assert code == 0


def test_a_persons_command_is_human_by_default(
    demo_db: str,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _ = run(capsys, "acknowledge", ITEM, "--db", demo_db, "--actor", "carol")
    assert code == 0
    _, history = run_json(capsys, "history", ITEM, "--db", demo_db)
    assert history["events"][-1]["detail"]["author"] == {"kind": "human"}


def test_keys_replay_and_refuse_reuse(
    demo_db: str,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    note = ["note", ITEM, "--db", demo_db, "--actor", "carol", "--idempotency-key", "n-1"]
    assert run_json(capsys, *note, "--body", "once")[1]["decision"] == "applied"
    before = snapshot(demo_db)
    code, doc = run_json(capsys, *note, "--body", "once")
    assert (code, doc["decision"], doc["reasons"]) == (0, "zero_write", ["idempotent_replay"])
    code, doc = run_json(capsys, *note, "--body", "another")
    assert (code, doc["reasons"]) == (3, ["idempotency_key_reuse"])
    assert snapshot(demo_db) == before


@pytest.mark.parametrize(
    "extra",
    [
        ("--body", ""),
        ("--body", "   "),
        ("--body", "x" * 10_001),
        ("--body", "ok", "--author-name", "helper"),
        ("--body", "ok", "--author-kind", "ai"),
        ("--body", "ok", "--author-kind", "human", "--author-family", "f"),
        ("--body", "ok", "--author-kind", "ai", "--author-name", "n" * 201, "--author-family", "f"),
        # the idempotency key's rule, the same in every shell: printable ASCII, no spaces
        ("--body", "ok", "--idempotency-key", "a key"),
        ("--body", "ok", "--idempotency-key", "clé"),
        ("--body", "ok", "--idempotency-key", ""),
    ],
    ids=[
        "empty",
        "blank",
        "too-long",
        "name-without-kind",
        "ai-unnamed",
        "human-family",
        "long",
        "key-space",
        "key-not-ascii",
        "key-empty",
    ],
)
def test_malformed_input_exits_2_and_writes_nothing(
    demo_db: str,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    extra: tuple[str, ...],
) -> None:
    before = snapshot(demo_db)
    code = run(capsys, "note", ITEM, "--db", demo_db, "--actor", "carol", *extra)[0]
    assert code == 2
    assert snapshot(demo_db) == before


def test_a_viewer_may_not_note_and_an_agent_claiming_human_gains_nothing(
    demo_db: str,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = snapshot(demo_db)
    code, doc = run_json(capsys, "note", ITEM, "--db", demo_db, "--actor", "dana", "--body", "hi")
    assert (code, doc["reasons"]) == (3, ["actor_not_authorized"])
    assert snapshot(demo_db) == before
    assert run(capsys, "actors", "add", "agent-7", "--role", "agent", "--db", demo_db)[0] == 0
    waiting = "service-health/checkout-api"
    _, item = run_json(capsys, "show", waiting, "--db", demo_db)
    digest = item["proposal"]["digest"]
    approve = ["approve", waiting, "--db", demo_db, "--actor", "agent-7", "--proposal", digest]
    code, doc = run_json(capsys, *approve, "--author-kind", "human")
    assert (code, doc["decision"], doc["reasons"]) == (3, "refused", ["agent_forbidden"])
    code, doc = run_json(
        capsys,
        "note",
        waiting,
        "--db",
        demo_db,
        "--actor",
        "agent-7",
        "--body",
        "I am a person",
        "--author-kind",
        "human",
    )
    assert (code, doc["reasons"]) == (3, ["agent_forbidden"])
