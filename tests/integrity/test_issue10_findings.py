"""Regression tests of issue 10's "What was found", one (or a few) per finding, on SQLite and
PostgreSQL, with real ``stopline`` processes wherever the finding involved a worker.

Each timing point is a file: the vault app parks a hook until the test creates the gate file,
and writes a marker when it parks (``apps/vault.py``). Every one of these tests failed, or could
not even be set up, on the code before the fix (commit e14b63a); see docs/security.md.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from proc import wait_for

from .attacker import Attacker, forge_roles
from .lab import VAULT_APP, Vault

S_PER_LEASE = "2"  # a short lease for the lease tests


def _events(vault: Vault, key: str) -> list[dict[str, Any]]:
    item = vault.item(key)
    return list(vault.cli_json("history", item.id)["events"])


def _executed(vault: Vault, key: str) -> list[dict[str, Any]]:
    return [e for e in vault.acting() if e["call"] == "execute" and e["key"] == key]


def _finding_reasons(vault: Vault, ref: str | None = None) -> set[tuple[str, str]]:
    doc = vault.verify()
    findings = doc.get("findings", [])  # (the code before issue 10 listed problems only)
    return {(f["kind"], f["reason"]) for f in findings if ref is None or f["ref"] == ref}


def _approve(vault: Vault, key: str, actor: str) -> dict[str, Any]:
    doc: dict[str, Any] = vault.cli_json(
        "approve", f"vault/{key}", "--actor", actor, "--proposal", vault.digest(key), ok=(0, 3)
    )
    return doc


# --- edited parameters run under an old approval ------------------------------------------


def test_edited_params_on_an_approved_item_never_run(vault_copy: Callable[[str], Vault]) -> None:
    """Params edited by SQL under an approved digest: verify names the item, and the worker
    stops it at ``exception`` (``integrity_failed``) where it stands, in ``approved``: it
    never reaches ``delivering`` and the execute hook is never called."""
    vault = vault_copy("params")
    attacker = Attacker(vault.url)
    try:
        data = attacker.data("vault/pay-approved")
        data["proposal"]["params"]["amount"] = 999999
        attacker.put_data("vault/pay-approved", data)
    finally:
        attacker.close()
    item = vault.item("pay-approved")
    assert ("item", "proposal_altered") in _finding_reasons(vault, item.id)
    vault.run_once()
    assert _executed(vault, "pay-approved") == []
    assert vault.states()["pay-approved"] == "exception"
    events = _events(vault, "pay-approved")
    assert "delivering" not in {e["to_state"] for e in events}
    last = events[-1]
    assert (last["command"], last["from_state"]) == ("integrity_failed", "approved")
    assert "integrity_failed" in last["reasons"]


def test_an_earlier_event_altered_in_place_is_never_acted_on(
    vault_copy: Callable[[str], Vault],
) -> None:
    """An event before the head (the observation, which the ledger does not record) edited
    in place: the row, its head and the ledger all agree, but the history does not hold up.
    verify names the event, and the worker stops the item at ``exception`` before the
    execute hook (the check before acting holds the whole history against the item)."""
    vault = vault_copy("earlier-event")
    item = vault.item("pay-approved")
    observed = [e for e in _events(vault, "pay-approved") if e["command"] == "observe"]
    assert len(observed) == 1 and observed[0]["seq"] < item.seq
    attacker = Attacker(vault.url)
    try:
        attacker.sql(
            "UPDATE events SET actor = 'mallory' WHERE item_id = :id AND seq = :seq",
            {"id": item.id, "seq": observed[0]["seq"]},
        )
    finally:
        attacker.close()
    assert ("event", "event_altered") in _finding_reasons(vault)
    vault.run_once()
    assert _executed(vault, "pay-approved") == []
    assert vault.states()["pay-approved"] == "exception"
    last = _events(vault, "pay-approved")[-1]
    assert last["command"] == "integrity_failed"


# --- forged authority is not seen -------------------------------------------------------------


def test_a_forged_approval_entry_does_not_count(vault_copy: Callable[[str], Vault]) -> None:
    """A forged entry in a two-approver proposal's approvals plus one real approval never
    reaches ``approved``: the approval is refused ``integrity_failed`` and nothing runs."""
    vault = vault_copy("forged-entry")
    attacker = Attacker(vault.url)
    try:
        data = attacker.data("vault/dual-fresh")
        proposal = data["proposal"]
        proposal["approvals"].append(
            {
                "actor": "bob",
                "at": "2026-01-01T00:00:00.000000Z",
                "digest": proposal["digest"],
                "role": "approver",
                "policy_version": proposal["policy_version"],
            }
        )
        attacker.put_data("vault/dual-fresh", data)
    finally:
        attacker.close()
    found = _finding_reasons(vault, vault.item("dual-fresh").id)
    assert ("item", "approval_unrecorded") in found
    answer = _approve(vault, "dual-fresh", "alice")
    assert answer["decision"] == "refused" and "integrity_failed" in answer["reasons"]
    vault.run_once()
    assert _executed(vault, "dual-fresh") == []
    assert vault.states()["dual-fresh"] == "awaiting_approval"


def test_roles_written_into_the_table_grant_nothing(vault_copy: Callable[[str], Vault]) -> None:
    """``UPDATE actors SET roles`` does not let a viewer approve; verify names the actor."""
    vault = vault_copy("viewer")
    forge_roles(vault.url, "dana", ["approver", "viewer"])
    assert ("actor", "registry_mismatch") in _finding_reasons(vault, "dana")
    answer = _approve(vault, "pay-waiting", "dana")
    assert answer["decision"] == "refused"
    vault.run_once()
    assert _executed(vault, "pay-waiting") == []
    assert vault.states()["pay-waiting"] == "awaiting_approval"


def test_a_forged_approve_event_is_not_executed(vault_copy: Callable[[str], Vault]) -> None:
    """A forged approve event for a real approver, hash-chained and sealed but not in the
    ledger: verify reports it, and the worker does not run the transfer."""
    from stopline.core.commands import Approve
    from stopline.core.decide import decide
    from stopline.core.step import Context

    vault = vault_copy("forged-event")
    attacker = Attacker(vault.url)
    try:
        item = attacker.item("vault/dual-half")
        policy = attacker.store.policy("vault")
        command = Approve(actor="bob", digest=item.doc("proposal")["digest"])
        actors = attacker.store.actors()
        decision = decide(item, command, Context(datetime.now(UTC), policy, actors))
        assert decision.applied
        attacker.write_decision(decision, ledger=False)
    finally:
        attacker.close()
    assert ("event", "event_unrecorded") in _finding_reasons(vault)
    vault.run_once()
    assert _executed(vault, "dual-half") == []


# --- verify misses most edits ---------------------------------------------------------------


def _set_data(key: str, change: Callable[[dict[str, Any]], None]) -> Callable[[Attacker], None]:
    def do(a: Attacker) -> None:
        data = a.data(f"vault/{key}")
        change(data)
        a.put_data(f"vault/{key}", data)

    return do


def _sql(statement: str, key: str) -> Callable[[Attacker], None]:
    def do(a: Attacker) -> None:
        a.sql(statement, {"id": a.item(f"vault/{key}").id})

    return do


def _drop_last_event(a: Attacker) -> None:
    """alice's approval event of the two-approver transfer dropped, and the row's history
    length and head set back to the event before it (its documents left as they are)."""
    item = a.item("vault/dual-half")
    previous = a.history(item.id)[-2]
    a.sql("DELETE FROM events WHERE item_id = :id AND seq = :seq", {"id": item.id, "seq": item.seq})
    a.sql(
        "UPDATE items SET seq = :seq, head = :head WHERE id = :id",
        {"seq": previous.seq, "head": previous.hash, "id": item.id},
    )


def _delete_item(a: Attacker) -> None:
    item_id = a.item("vault/pay-waiting").id
    a.sql("DELETE FROM events WHERE item_id = :id", {"id": item_id})
    a.sql("DELETE FROM items WHERE id = :id", {"id": item_id})


def _edit_policy(a: Attacker) -> None:
    row = a.rows("SELECT policy FROM automations WHERE name = 'vault'")[0]
    policy = json.loads(row["policy"]) if isinstance(row["policy"], str) else dict(row["policy"])
    policy["approval"]["rules"]["refund"]["approvals"] = 0
    a.sql("UPDATE automations SET policy = :p WHERE name = 'vault'", {"p": a.json(policy)})


def _unrevoke(a: Attacker) -> None:
    a.sql("UPDATE tokens SET revoked_at = NULL WHERE actor = 'rita'")


def _roles(a: Attacker) -> None:
    a.sql("UPDATE actors SET roles = :r WHERE name = 'dana'", {"r": a.json(["approver"])})


UNSEEN = {  # what the issue found unseen by verify, each as one edit
    "evidence": _set_data("pay-waiting", lambda d: d["evidence"]["data"].update(balance=10**6)),
    "artifacts": _set_data(
        "note-done", lambda d: d["artifacts"][0].update(remote_id="itm-elsewhere-0-note")
    ),
    "attempts": _sql("UPDATE items SET attempts = 0 WHERE id = :id", "broken-1"),
    "state class": _sql("UPDATE items SET state_class = 'work' WHERE id = :id", "pay-waiting"),
    "policy": _edit_policy,
    "tokens": _unrevoke,
    "approvals": _set_data("dual-half", lambda d: d["proposal"].update(approvals=[])),
    "actor roles": _roles,
    "a dropped final event": _drop_last_event,
    "a deleted item": _delete_item,
}


@pytest.mark.parametrize("what", list(UNSEEN))
def test_verify_sees_what_it_missed(what: str, vault_copy: Callable[[str], Vault]) -> None:
    """Each kind of edit the issue found unseen is now a finding of ``stopline verify``
    (exit 3, ``ok: false``)."""
    vault = vault_copy(what.replace(" ", "-"))
    attacker = Attacker(vault.url)
    try:
        UNSEEN[what](attacker)
    finally:
        attacker.close()
    done = vault.cli("verify", "--json", ok=(0, 3))
    doc = json.loads(done.stdout)
    assert done.returncode == 3 and not doc["ok"], f"{what}: verify saw nothing"


# --- a retried execution skips the re-check -------------------------------------------------


def test_a_retry_rechecks_authority(vault_copy: Callable[[str], Vault]) -> None:
    """The execute hook fails (TransientError) on its first call while the approver is
    revoked: the retry does not call the hook again, and the item goes back to
    ``awaiting_approval`` with the reasons."""
    vault = vault_copy("retry")
    assert _approve(vault, "pay-waiting", "bob")["state"] == "approved"
    gate = vault.root / "gate"
    env = {
        "STOPLINE_TEST_PARK": "execute",
        "STOPLINE_TEST_PARK_KEY": "pay-waiting",
        "STOPLINE_TEST_FAIL_FIRST": "execute",
        "STOPLINE_TEST_GATE": str(gate),
    }
    worker = vault.start("run", VAULT_APP, "--once", "--linger", "2", "--json", env=env)
    wait_for(lambda: Path(f"{gate}.parked").exists(), 120, "the execute hook to park")
    vault.cli_json("actors", "revoke", "bob")
    gate.write_text("go")
    assert worker.wait(120) == 0, worker.output()
    assert len(_executed(vault, "pay-waiting")) == 1, "the hook ran again after the revocation"
    assert vault.states()["pay-waiting"] == "awaiting_approval"
    last = _events(vault, "pay-waiting")[-1]
    assert last["command"] == "recheck_failed"
    assert {"actor_unknown", "approvals_missing"} <= set(last["reasons"]), last


def _forge_a_role_while_parked(vault: Vault, hook: str, key: str, **env: str) -> None:
    """Run the worker until ``hook`` parks on ``key``; forge a role meanwhile; let the hook
    return, and wait for the worker to end."""
    gate = vault.root / "gate"
    park = {
        "STOPLINE_TEST_PARK": hook,
        "STOPLINE_TEST_PARK_KEY": key,
        "STOPLINE_TEST_GATE": str(gate),
    }
    worker = vault.start("run", VAULT_APP, "--once", "--linger", "2", "--json", env={**env, **park})
    wait_for(lambda: Path(f"{gate}.parked").exists(), 120, f"the {hook} hook to park")
    forge_roles(vault.url, "dana", ["approver", "viewer"])
    gate.write_text("go")
    assert worker.wait(120) == 0, worker.output()


def test_a_registry_edited_while_the_execute_hook_runs_stops_the_create(
    vault_copy: Callable[[str], Vault],
) -> None:
    """The check before acting runs again before each remote write, not only before the
    execute hook: an actor's roles written by SQL while a new note's execute hook runs (after
    the check before the hook passed) stop the note at ``exception`` before its create."""
    vault = vault_copy("create-guard")
    attacker = Attacker(vault.url)
    try:
        attacker.sql("DELETE FROM schedules")  # discovery due again: the new key is found
    finally:
        attacker.close()
    _forge_a_role_while_parked(vault, "execute", "note-new", STOPLINE_TEST_KEYS="note-new")
    item = vault.item("note-new")
    assert [e["call"] for e in vault.acting() if e.get("item") == item.id] == ["execute"]
    assert vault.states()["note-new"] == "exception"
    last = _events(vault, "note-new")[-1]
    assert (last["command"], last["from_state"]) == ("integrity_failed", "delivering"), last


def test_a_registry_edited_while_the_revise_hook_runs_stops_the_update(
    vault_copy: Callable[[str], Vault],
) -> None:
    """The same before an update: an actor's roles written by SQL while the revise hook of a
    completed note runs stop the revision at ``exception`` before its update."""
    vault = vault_copy("update-guard")
    vault.cli_json(
        "revise", "vault/note-done", "--actor", "carol", "--reason", "clearer", "--artifact", "note"
    )
    before = len(vault.acting())
    _forge_a_role_while_parked(vault, "revise", "note-done")
    assert "update" not in {e["call"] for e in vault.acting()[before:]}
    assert vault.states()["note-done"] == "exception"
    last = _events(vault, "note-done")[-1]
    assert (last["command"], last["from_state"]) == ("integrity_failed", "revision_prepared")


# --- a revision that cannot run still reopens the job ---------------------------------------


def test_a_revision_without_a_revise_hook_writes_nothing(store_url: str, tmp_path: Path) -> None:
    """``revise`` on an automation with no revise hook is refused
    (``mode_forbids_revision``) and writes nothing but the refusal."""
    vault = Vault(tmp_path, store_url)
    env = {"STOPLINE_TEST_NO_REVISE": "1", "STOPLINE_TEST_KEYS": "note-x"}
    vault.run_once(env=env)
    assert vault.states() == {"note-x": "completed"}
    before = _dump(vault)
    answer = vault.cli_json(
        "revise",
        "vault/note-x",
        "--actor",
        "carol",
        "--reason",
        "r",
        "--artifact",
        "note",
        ok=(0, 3),
    )
    assert answer["decision"] == "refused"
    assert "mode_forbids_revision" in answer["reasons"]
    assert _dump(vault) == before


def _dump(vault: Vault) -> dict[str, list[str]]:
    """Every row of the item tables (refusals excepted), as text."""
    out = {}
    for table in ("items", "events"):
        rows = vault.query(f"SELECT * FROM {table}")
        out[table] = sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
    return out


# --- a paused worker writes after losing its lease ------------------------------------------


def test_a_paused_worker_does_not_update_after_its_lease(
    vault_copy: Callable[[str], Vault],
) -> None:
    """A revision whose update outcome was lost is resumed; its worker is stopped (SIGSTOP)
    while it reads the object back, past its lease, and the revision is swept; resumed
    (SIGCONT), it calls no update on the target."""
    vault = vault_copy("paused")
    note = vault.item("note-done")
    lease = {"STOPLINE_TEST_LEASE": S_PER_LEASE}
    vault.cli_json(
        "revise",
        "vault/note-done",
        "--actor",
        "carol",
        "--reason",
        "clearer",
        "--artifact",
        "note",
    )
    # The first attempt dies after recording its update intent, before the update call.
    crashed = vault.start(
        "run", VAULT_APP, "--once", "--json", env={**lease, "STOPLINE_CRASH_AT": "before_update"}
    )
    assert crashed.wait(120) == 137, crashed.output()
    _sweep_when_expired(vault, note.id, lease)
    assert vault.states()["note-done"] == "revision_failed"
    vault.cli_json(
        "revise",
        "vault/note-done",
        "--actor",
        "carol",
        "--reason",
        "clearer",
        "--artifact",
        "note",
    )
    assert vault.states()["note-done"] == "revision_prepared"
    gate = vault.root / "gate"
    env = {
        **lease,
        "STOPLINE_TEST_PARK": "read",
        "STOPLINE_TEST_PARK_KEY": note.id,
        "STOPLINE_TEST_GATE": str(gate),
    }
    worker = vault.start("run", VAULT_APP, "--once", "--json", env=env)
    wait_for(lambda: Path(f"{gate}.parked").exists(), 120, "the worker to read the note back")
    vault.pause(worker)
    try:
        _sweep_when_expired(vault, note.id, lease)
        assert vault.states()["note-done"] == "revision_failed"
        gate.write_text("go")
    finally:
        os.kill(worker.pid, signal.SIGCONT)
    assert worker.wait(120) == 0, worker.output()
    updates = [e for e in vault.effects() if e["call"] == "update"]
    assert updates == [], f"the paused worker updated the object: {updates}"
    assert vault.states()["note-done"] == "revision_failed"


def _sweep_when_expired(vault: Vault, item_id: str, env: dict[str, str]) -> None:
    """Once the item's lease has run out, a ``run --once`` sweeps it."""

    def expired() -> bool:
        rows = vault.query("SELECT lease_expires_at FROM items WHERE id = ?", (item_id,))
        at = rows[0]["lease_expires_at"]
        if at is None:
            return True
        when = at if isinstance(at, datetime) else datetime.fromisoformat(at.replace("Z", "+00:00"))
        return when < datetime.now(UTC)

    wait_for(expired, 60, "the lease to run out")
    vault.run_once(env=env)


# --- smaller gaps ---------------------------------------------------------------------------


def test_issuing_a_token_writes_a_registry_event(vault_copy: Callable[[str], Vault]) -> None:
    """``stopline actors token NAME`` appends a token_issue event to the registry chain, and
    verify stays clean."""
    vault = vault_copy("token")
    before = vault.query("SELECT change, actor FROM actor_events")
    vault.cli_json("actors", "token", "bob")
    after = vault.query("SELECT change, actor FROM actor_events")
    assert after[len(before) :] == [{"change": "token_issue", "actor": "bob"}]
    assert vault.verify()["ok"]


def test_a_lookalike_actor_name_is_refused(store_url: str, tmp_path: Path) -> None:
    """``actors add`` with a Cyrillic letter beside a registered Latin name is refused
    (exit 2) and adds nobody."""
    vault = Vault(tmp_path, store_url)
    vault.cli_json("actors", "add", "alice", "--role", "approver")
    done = vault.cli("actors", "add", "\u0430lice", "--role", "approver", ok=(2,))
    assert "U+0430" in done.stderr
    names = [a["name"] for a in vault.cli_json("actors", "list")["actors"]]
    assert names == ["alice"]


SLASH_APP = """
from stopline.runtime.automation import App, Automation
from stopline.runtime.outcomes import Evidence, ReportForReview
app = App([Automation(name="a/b", discover=lambda ctx: ["c"],
    observe=lambda ctx: Evidence({}), propose=lambda ctx: ReportForReview({}))])
"""


def test_an_automation_name_with_a_slash_is_refused(store_url: str, tmp_path: Path) -> None:
    """An automation named ``a/b`` is refused when the app is loaded: ``stopline run`` exits
    2 and the store holds no item and no automation."""
    app = tmp_path / "slash_app.py"
    app.write_text(SLASH_APP)
    vault = Vault(tmp_path, store_url)
    vault.cli("migrate", "--json")
    done = vault.cli("run", f"{app}:app", "--once", "--json", ok=(2,))
    assert "a/b" in done.stderr
    assert vault.query("SELECT id FROM items") == []
    assert vault.query("SELECT name FROM automations") == []


def test_a_returner_may_not_approve_the_answer(vault_copy: Callable[[str], Vault]) -> None:
    """Whoever rejected with ``--return`` may not approve the proposal their reason shaped
    (``self_approval``); another approver may."""
    vault = vault_copy("returner")
    vault.cli_json(
        "reject",
        "vault/pay-waiting",
        "--actor",
        "alice",
        "--reason",
        "make it 5",
        "--return",
        "--proposal",
        vault.digest("pay-waiting"),
    )
    vault.run_once()
    assert vault.states()["pay-waiting"] == "awaiting_approval"
    answer = _approve(vault, "pay-waiting", "alice")
    assert answer["decision"] == "refused" and "self_approval" in answer["reasons"]
    assert _approve(vault, "pay-waiting", "bob")["state"] == "approved"
