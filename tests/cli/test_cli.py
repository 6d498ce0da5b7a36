"""The command line: contract JSON shapes, exit statuses, verify, actors."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from integrity.attacker import Attacker, forge_roles
from stopline.cli.main import main
from stopline.store.queries import migrations

SQLITE_VERSIONS = [version for version, _, _ in migrations("sqlite")]

CLI = [sys.executable, "-m", "stopline.cli.main"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code, out = run(capsys, *argv, "--json")
    return code, json.loads(out)


@pytest.fixture
def demo_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STOPLINE_DEMO_DRAFTS", str(tmp_path / "drafts"))
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    code, _doc = run_json(capsys, "demo", "--db", url)
    assert code == 0
    return url


def test_demo_json_lists_items_at_every_stop_state(
    demo_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`stopline demo --json` prints {db, items} and leaves items at every stop state that exists."""
    _code, doc = run_json(capsys, "items", "--db", demo_db)
    states = {i["state"] for i in doc["items"]}
    assert {
        "awaiting_approval",
        "ready_for_review",
        "exception",
        "exhausted",
        "completed",
    } <= states
    for row in doc["items"]:
        assert {"id", "automation", "key", "state"} <= set(row)


def test_show_json_has_the_contract_fields(
    demo_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`show --json` carries the fields docs/cli.md documents, for a proposal and an account."""
    _, doc = run_json(capsys, "show", "service-health/checkout-api", "--db", demo_db)
    for key in (
        "id",
        "automation",
        "key",
        "state",
        "history_length",
        "attempts",
        "max_attempts",
        "next_eligible_at",
        "account",
        "proposal",
        "artifacts",
        "revision",
    ):
        assert key in doc
    proposal = doc["proposal"]
    for key in ("digest", "action", "params", "required_roles", "required_approvals", "approvals"):
        assert key in proposal
    assert proposal["approvals_text"] == "1 of 2"
    assert doc["integrity"] == {"ok": True, "findings": []}
    _, exhausted = run_json(capsys, "show", "service-health/billing-api", "--db", demo_db)
    assert exhausted["state"] == "exhausted"
    account = exhausted["account"]
    assert account["attempt_count"] == 3 and len(account["attempts"]) == 3
    assert {"at", "class", "message"} <= set(account["attempts"][0])
    assert "resume" in account and "last_evidence_digest" in account
    _, digest_item = run_json(capsys, "show", "weekly-digest/2026-W48", "--db", demo_db)
    assert [a["key"] for a in digest_item["artifacts"]] == ["article-1", "article-2"]
    for art in digest_item["artifacts"]:
        assert art["readback_hash"] == art["content_hash"] and art["remote_id"]


def test_show_names_approvers_as_the_registry_chain_records_them(
    demo_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Who may still approve comes from the registry chain, as the decision does: dana (a
    viewer) given the approver role by hand in the actors table is not named."""
    _, before = run_json(capsys, "show", "service-health/checkout-api", "--db", demo_db)
    assert before["proposal"]["outlook"]["eligible"] == ["bob"]
    forge_roles(demo_db, "dana", ["approver", "viewer"])
    _, after = run_json(capsys, "show", "service-health/checkout-api", "--db", demo_db)
    assert after["proposal"]["outlook"] == before["proposal"]["outlook"]
    _, listed = run_json(capsys, "items", "--db", demo_db)
    row = next(r for r in listed["items"] if r["key"] == "checkout-api")
    assert "dana" not in json.dumps(row)


def test_show_says_when_a_record_is_not_what_its_history_sealed(
    demo_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A proposal's parameters edited by hand under their digest: `show` says the record fails
    its seal (JSON and text), so nobody approves a digest for what the row shows."""
    attacker = Attacker(demo_db)
    try:
        data = attacker.data("service-health/checkout-api")
        data["proposal"]["params"]["strategy"] = "canary, one pod"
        attacker.put_data("service-health/checkout-api", data)
    finally:
        attacker.close()
    _, doc = run_json(capsys, "show", "service-health/checkout-api", "--db", demo_db)
    assert doc["integrity"]["ok"] is False
    assert {f["reason"] for f in doc["integrity"]["findings"]} >= {"seal_mismatch"}
    code, text = run(capsys, "show", "service-health/checkout-api", "--db", demo_db)
    assert code == 0 and text.startswith("WARNING: this record is not what its history sealed")


def test_show_ends_with_the_commands_that_would_move_a_waiting_item(
    demo_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A waiting item's ``show`` lists the approve and reject commands bound to its current
    proposal digest, for a person to fill in; never one that would act."""
    ref = "service-health/checkout-api"
    doc = run_json(capsys, "show", ref, "--db", demo_db)[1]
    item, digest = doc["id"], doc["proposal"]["digest"]
    text = run(capsys, "show", ref, "--db", demo_db)[1]
    assert f"\nnext:\n  stopline approve {item} --actor ACTOR --proposal {digest}\n" in text
    assert f"  stopline reject {item} --actor ACTOR --proposal {digest} --reason" in text


def test_unknown_item_is_refused_with_exit_3(
    demo_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command on an unknown item is refused `unknown_item`, exit status 3."""
    code, doc = run_json(
        capsys, "close", "nope", "--actor", "carol", "--reason", "x", "--db", demo_db
    )
    assert code == 3 and doc["decision"] == "refused" and doc["reasons"] == ["unknown_item"]
    assert doc["sequence"] is None


def test_bad_usage_exits_2(demo_db: str) -> None:
    """Malformed input is exit status 2 and writes nothing."""
    out = subprocess.run(
        [
            *CLI,
            "resolve",
            "x",
            "--actor",
            "carol",
            "--reason",
            "r",
            "--input",
            "{not json",
            "--db",
            demo_db,
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "not valid JSON" in out.stderr
    out = subprocess.run([*CLI, "approve", "x", "--db", demo_db], capture_output=True, text=True)
    assert out.returncode == 2


def test_items_filters_by_state_automation_and_limit(
    demo_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``items`` lists what its filters name and no more; an unknown state is exit 2 with the
    states it could be, never an empty list that reads as "nothing waits"."""
    every = run_json(capsys, "items", "--db", demo_db)[1]["items"]
    assert len({i["automation"] for i in every}) > 1 and len({i["state"] for i in every}) > 1
    waiting = run_json(capsys, "items", "--state", "awaiting_approval", "--db", demo_db)[1]
    assert waiting["items"] and {i["state"] for i in waiting["items"]} == {"awaiting_approval"}
    one = every[0]["automation"]
    mine = run_json(capsys, "items", "--automation", one, "--db", demo_db)[1]["items"]
    assert mine and {i["automation"] for i in mine} == {one}
    assert len(run_json(capsys, "items", "--limit", "1", "--db", demo_db)[1]["items"]) == 1
    code = main(["items", "--state", "waiting", "--db", demo_db])
    assert code == 2 and "unknown state 'waiting'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name", ["STOPLINE_WORKERS", "STOPLINE_CONCURRENCY", "STOPLINE_BATCH", "STOPLINE_AHEAD"]
)
def test_a_bad_number_in_the_environment_is_a_usage_error(name: str, tmp_path: Path) -> None:
    """A setting from the environment is checked like the option it stands for: exit 2 with
    one usage line, no traceback, and no database made."""
    db = tmp_path / "never.db"
    out = subprocess.run(
        [*CLI, "run", "stopline.examples.demo:app", "--once", "--db", f"sqlite:///{db}"],
        capture_output=True,
        text=True,
        env={**os.environ, name: "abc"},
    )
    assert out.returncode == 2, out.stderr
    assert "invalid int value: 'abc'" in out.stderr and "Traceback" not in out.stderr
    assert not db.exists()


def test_json_arguments_outside_the_input_limits_exit_2(
    demo_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """NaN, 1e999, a 20-digit integer or a lone surrogate in --params: exit 2, one line, no write."""
    ref = "service-health/checkout-api"
    _, before = run_json(capsys, "history", ref, "--db", demo_db)
    for params, where in [
        ('{"a": NaN}', "$.a: not_finite"),
        ('{"a": [1e999]}', "$.a[0]: not_finite"),
        ('{"a": 100000000000000000000}', "$.a: integer_range"),
        ('{"a": "\\ud800"}', "$.a: unicode"),
    ]:
        code = main(["edit", ref, "--actor", "alice", "--params", params, "--db", demo_db])
        err = capsys.readouterr().err
        assert code == 2 and where in err and len(err.strip().splitlines()) == 1, err
    _, after = run_json(capsys, "history", ref, "--db", demo_db)
    assert after == before


def test_verify_detects_a_tampered_event(demo_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Editing one event row directly makes `verify` exit 3 and name the item, and its text
    for a person opens with PROBLEMS where it opened with ok."""
    code, doc = run_json(capsys, "verify", "--db", demo_db)
    assert code == 0 and doc["ok"] and doc["problems"] == [] and doc["events"] > 0
    assert run(capsys, "verify", "--db", demo_db)[1].startswith("ok: ")
    path = demo_db.removeprefix("sqlite:///")
    conn = sqlite3.connect(path)
    item_id = conn.execute("SELECT item_id FROM events WHERE seq = 2 LIMIT 1").fetchone()[0]
    conn.execute("DROP TRIGGER events_no_update")  # an attacker with write access to the file
    conn.execute("UPDATE events SET actor = 'mallory' WHERE item_id = ? AND seq = 2", (item_id,))
    conn.commit()
    conn.close()
    code, doc = run_json(capsys, "verify", "--db", demo_db)
    assert code == 3 and not doc["ok"]
    assert any(item_id in p and "altered" in p for p in doc["problems"])
    code, text = run(capsys, "verify", "--db", demo_db)
    assert code == 3 and text.startswith("PROBLEMS: ") and item_id in text


def test_the_event_log_refuses_updates(demo_db: str) -> None:
    """The event table is append-only: an UPDATE is aborted by the database."""
    conn = sqlite3.connect(demo_db.removeprefix("sqlite:///"))
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE events SET actor = 'x'")
    conn.close()


def test_actors_registry_changes_are_audited(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """actors add/list/revoke/token each work, and each change is an audited actor event."""
    url = f"sqlite:///{tmp_path / 'a.db'}"
    assert (
        run_json(
            capsys, "actors", "add", "erin", "--role", "operator", "--role", "approver", "--db", url
        )[0]
        == 0
    )
    code, doc = run_json(capsys, "actors", "list", "--db", url)
    assert doc["actors"] == [{"name": "erin", "roles": ["approver", "operator"], "active": True}]
    code, doc = run_json(capsys, "actors", "token", "erin", "--db", url)
    assert code == 0 and doc["token"].startswith("stl_")
    assert run_json(capsys, "actors", "revoke", "erin", "--role", "approver", "--db", url)[1][
        "roles"
    ] == ["operator"]
    assert run_json(capsys, "actors", "revoke", "erin", "--db", url)[1]["active"] is False
    assert run_json(capsys, "actors", "token", "erin", "--db", url)[0] == 3
    conn = sqlite3.connect(tmp_path / "a.db")
    changes = [r[0] for r in conn.execute("SELECT change FROM actor_events ORDER BY id")]
    tokens = conn.execute("SELECT hash, revoked_at FROM tokens").fetchall()
    conn.close()
    assert changes == ["add", "token_issue", "revoke_role", "revoke", "token_revoke"]
    assert len(tokens) == 1 and tokens[0][1] is not None and not tokens[0][0].startswith("stl_")
    assert run_json(capsys, "verify", "--db", url)[0] == 0


def test_operator_commands_need_a_known_operator(
    demo_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """acknowledge by an unknown actor is actor_unknown; by a viewer actor_not_authorized."""
    code, doc = run_json(
        capsys, "acknowledge", "service-health/search", "--actor", "ghost", "--db", demo_db
    )
    assert code == 3 and doc["reasons"] == ["actor_unknown"]
    code, doc = run_json(
        capsys, "acknowledge", "service-health/search", "--actor", "dana", "--db", demo_db
    )
    assert code == 3 and doc["reasons"] == ["actor_not_authorized"]
    code, doc = run_json(
        capsys, "acknowledge", "service-health/search", "--actor", "carol", "--db", demo_db
    )
    assert code == 0 and doc["decision"] == "applied" and doc["state"] == "closed"


def test_migrate_is_idempotent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`stopline migrate` applies the schema once; a second run applies nothing."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    code, first = run_json(capsys, "migrate", "--db", url)
    code2, second = run_json(capsys, "migrate", "--db", url)
    assert code == code2 == 0 and first["applied"] == SQLITE_VERSIONS and second["applied"] == []


def test_env_var_selects_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """STOPLINE_DATABASE_URL is used when --db is absent."""
    monkeypatch.setenv("STOPLINE_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    assert run_json(capsys, "migrate")[0] == 0
    assert (tmp_path / "env.db").exists()


@pytest.mark.parametrize(
    ("extra", "code", "why"),
    [
        ([], "import sys; sys.modules['greenlet'] = None", "needs the greenlet package"),
        (["--ahead", "-1"], "", "--ahead must be at least 0"),
    ],
)
def test_run_lockstep_that_cannot_be_is_a_usage_error(
    extra: list[str], code: str, why: str, tmp_path: Path
) -> None:
    """``--lockstep`` without the greenlet package (here made unimportable, as on a machine
    without the extra), or with a negative ``--ahead``: exit 2, one line that says why, no
    traceback, nothing run."""
    db = tmp_path / "demo.db"
    args = ["run", "stopline.examples.demo:app", "--once", "--lockstep", "--db", f"sqlite:///{db}"]
    program = (
        f"{code}\nfrom stopline.cli.main import main\nraise SystemExit(main({args + extra!r}))"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert why in out.stderr and "Traceback" not in out.stderr
    assert not db.exists()


def test_text_output_never_carries_a_terminals_control_sequences(
    demo_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A note (an operator's, an HTTP user's or an agent's) may hold escape sequences that
    clear an operator's screen, retitle the window or overwrite the line above: `show` writes
    each as its escape, and `--json` keeps the text exactly."""
    _code, doc = run_json(capsys, "items", "--db", demo_db)
    item = doc["items"][0]["id"]
    body = "hello\x1b[2J\x1b]0;pwned\x07\rworld"
    code, _ = run(capsys, "note", item, "--db", demo_db, "--actor", "alice", "--body", body)
    assert code == 0
    code, text = run(capsys, "show", item, "--db", demo_db)
    assert code == 0
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "hello\\x1b[2J\\x1b]0;pwned\\x07\\rworld" in text
    _code, shown = run_json(capsys, "show", item, "--db", demo_db)
    assert json.dumps(body)[1:-1] in json.dumps(shown)  # the very text, JSON-escaped
