"""A process with full write access to the database and no private key tries to act (issue 13,
item 7), on SQLite and PostgreSQL, with real ``stopline`` worker processes.

The attacker is stopline's own code run in unsigned mode against the same database (which
writes consistent hash chains, seals and ledger entries), or plain SQL. Each attempt is refused,
or the worker stops the item in ``exception`` with ``signature_invalid``; the execute hook never
runs, no remote object is created, and ``stopline verify`` in signed mode names what was done.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from stopline.controller import Controller, utcnow
from stopline.core.commands import Approve, Discover, Observe, Propose
from stopline.core.decide import decide
from stopline.core.decision import Outcome
from stopline.core.policy import ApprovalPolicy, ApprovalRule
from stopline.core.step import Context
from stopline.store import Store
from stopline.trust import admin
from stopline.trust.checks import attest

from .signedlab import SignedLab, execute_sql, findings_about

SIGNATURE_INVALID = "signature_invalid"


def unsigned(store: Store) -> Controller:
    """The attacker's controller: stopline's own code on a host with no trust root."""
    return Controller(store, trust=None)


def stopped_for_signature(lab: SignedLab, key: str = "k1") -> None:
    """The worker stopped ``key`` in exception with signature_invalid, and nothing ran."""
    item = lab.item(key)
    assert item.state.value == "exception", item.state
    with lab.store() as store:
        last = store.history(item.id)[-1]
    assert SIGNATURE_INVALID in last.reasons, last.reasons
    assert item.doc("exception")["owner"]
    nothing_executed(lab)


def nothing_executed(lab: SignedLab) -> None:
    assert lab.executed() == [], "the execute hook ran"
    assert lab.remote_objects() == [], "a remote object was created"


def named(report: Any, ref: str, reason: str = SIGNATURE_INVALID) -> list[dict[str, str]]:
    found = [f for f in findings_about(report, ref) if f["reason"] == reason]
    assert found, f"verify does not name {ref} with {reason}: {report['problems']}"
    return found


def signed_approval(lab: SignedLab, who: str, key: str = "k1") -> Any:
    with lab.store() as store:
        return lab.controller(store, who).approve(
            lab.item(key).id, proposal=lab.digest(key), actor=who
        )


def test_a_forged_approval_with_a_consistent_chain(lab: SignedLab) -> None:
    """(a) stopline itself, in unsigned mode, approves as alice and bob: every chain is
    consistent, so only the missing signature tells; the worker stops the item."""
    digest = lab.digest()
    for who in ("alice", "bob"):
        lab.cli("actors", "add", who, "--role", "approver", signed=False)
        lab.cli("approve", "pay/k1", "--proposal", digest, "--actor", who, signed=False)
    assert lab.item().state.value == "approved"
    assert lab.verify(signed=False)["ok"]  # no hash tells the forgery apart
    lab.work()
    stopped_for_signature(lab)
    report = lab.verify()
    assert not report["ok"]
    assert named(report, lab.item().id)


def test_b_a_role_added_to_an_actor(lab: SignedLab) -> None:
    """(b) carol (an operator) gets the approver role, first through stopline's unsigned
    registry (consistent), then by UPDATE actors: her signed approval is refused both times,
    and the attacker's unsigned one too."""
    assert signed_approval(lab, "bob").state.value == "awaiting_approval"  # 1 of 2
    lab.cli("actors", "add", "carol", "--role", "approver", signed=False)
    refused = signed_approval(lab, "carol")
    assert refused.outcome is Outcome.REFUSED
    assert "actor_not_authorized" in refused.reasons  # the certificate says operator
    with lab.store() as store:
        execute_sql(store, 'UPDATE actors SET roles = \'["approver", "operator"]\'')
    refused = signed_approval(lab, "carol")
    assert refused.outcome is Outcome.REFUSED and "integrity_failed" in refused.reasons
    done = lab.cli(
        "approve", "pay/k1", "--proposal", lab.digest(), "--actor", "carol", "--json", ok=(3,)
    )
    assert SIGNATURE_INVALID in done.stdout
    lab.work()
    assert lab.item().state.value == "awaiting_approval"
    nothing_executed(lab)
    report = lab.verify()
    assert [f for f in report["findings"] if f["kind"] == "actor" and f["ref"] == "carol"]


def test_c_a_certificate_signed_by_another_key(lab: SignedLab) -> None:
    """(c) the attacker certifies its own key with a key of its own, signs an approval with it
    and records it through stopline's unsigned code: refused when given to a signed host, and
    stopped by the worker when written around it."""
    mallory = lab.keys["mallory"]
    with lab.store() as store:
        admin.certify(
            store,
            lab.keys["fake-root"],
            "mallory",
            mallory.public_key,
            roles=["approver"],
            now=utcnow(),
        )
    done = lab.cli(
        "approve",
        "pay/k1",
        "--proposal",
        lab.digest(),
        "--actor",
        "mallory",
        "--key",
        str(lab.key_path("mallory")),
        "--json",
        ok=(3,),
    )
    assert SIGNATURE_INVALID in done.stdout
    assert signed_approval(lab, "bob").state.value == "awaiting_approval"  # 1 of 2
    with lab.store() as store:
        attacker = unsigned(store)
        attacker.add_actor("bob", ["approver"])
        attacker.add_actor("mallory", ["approver"])
        item = lab.item()
        command = Approve(actor="mallory", digest=lab.digest())
        signature = attest(item, command, mallory, utcnow(), roles=["approver"]).to_plain()
        forged = attacker.run(item.id, Approve("mallory", lab.digest(), attestation=signature))
    assert forged.state is not None and forged.state.value == "approved"
    lab.work()
    stopped_for_signature(lab)
    report = lab.verify()
    assert named(report, lab.item().id)
    registry = [f for f in report["findings"] if f["kind"] == "registry"]
    assert any("mallory" in f["detail"] and "trust root" in f["detail"] for f in registry)


def test_d_a_signature_replayed_on_another_item(make_lab: Callable[..., SignedLab]) -> None:
    """(d) alice's signed approval of k1 is given again for k2: refused by a signed host, and
    stopped by the worker when recorded by stopline's unsigned code."""
    lab = make_lab(item_keys=("k1", "k2"))
    assert signed_approval(lab, "alice", "k1").state.value == "awaiting_approval"
    signature = lab.item("k1").doc("proposal")["approvals"][0]["attestation"]
    k2 = lab.item("k2")
    replay = Approve("alice", lab.digest("k2"), attestation=signature)
    with lab.store() as store:
        refused = lab.controller(store).run(k2.id, replay)
        assert refused.reasons == (SIGNATURE_INVALID,)
        assert any(lab.item("k1").id in line for line in refused.explanation)
        attacker = unsigned(store)
        attacker.add_actor("alice", ["approver"])
        assert attacker.run(k2.id, replay).outcome is Outcome.APPLIED
    assert signed_approval(lab, "bob", "k2").state.value == "approved"
    lab.work()
    stopped_for_signature(lab, "k2")
    assert lab.item("k1").state.value == "awaiting_approval"
    assert named(lab.verify(), k2.id)


def test_e_an_edited_proposal_keeps_an_old_signed_approval(lab: SignedLab) -> None:
    """(e) after alice signed, the proposal is edited (new params, digest and seal, all
    consistent) and alice's old signed approval is recorded on it again; bob signs the edited
    one. The worker finds alice's signature bound to another proposal and stops."""
    old = lab.digest()
    assert signed_approval(lab, "alice").state.value == "awaiting_approval"
    signature = lab.item().doc("proposal")["approvals"][0]["attestation"]
    with lab.store() as store:
        attacker = unsigned(store)
        attacker.add_actor("mallory", ["operator"])
        attacker.add_actor("alice", ["approver"])
        item_id = lab.item().id
        edited = attacker.edit(item_id, actor="mallory", params={"amount": 1000, "to": "k1"})
        assert edited.outcome is Outcome.APPLIED
        new = lab.digest()
        assert new != old
        refused = lab.controller(store).run(item_id, Approve("alice", new, attestation=signature))
        assert refused.reasons == (SIGNATURE_INVALID,)
        kept = attacker.run(item_id, Approve("alice", new, attestation=signature))
        assert kept.outcome is Outcome.APPLIED
    assert lab.verify(signed=False)["ok"]  # consistent, but for the signature
    assert signed_approval(lab, "bob").state.value == "approved"
    lab.work()
    stopped_for_signature(lab)
    found = named(lab.verify(), item_id)
    assert any("another proposal" in f["detail"] for f in found)


def test_f_a_signature_after_its_key_was_revoked(make_lab: Callable[..., SignedLab]) -> None:
    """(f) alice's key is revoked after she signed an approval the worker has not acted on:
    the worker stops the item; a new command signed with the revoked key is refused."""
    lab = make_lab(item_keys=("k1", "k2"))
    signed_approval(lab, "alice")
    assert signed_approval(lab, "bob").state.value == "approved"
    lab.cli("keys", "revoke", "alice", "--root", str(lab.key_path("root")))
    refused = signed_approval(lab, "alice", "k2")
    assert refused.reasons == (SIGNATURE_INVALID,)
    assert any("revoked" in line for line in refused.explanation)
    lab.work()
    stopped_for_signature(lab)
    found = named(lab.verify(), lab.item().id)
    assert any("revoked" in f["detail"] for f in found)


# --- (g) a rollback to a copy of the database from before a checkpoint -------------------------


@contextmanager
def snapshots(
    lab: SignedLab, request: pytest.FixtureRequest
) -> Iterator[tuple[Callable[[], None], Callable[[], None]]]:
    """``(take, restore)``: copy the whole database now, and put that copy back later."""
    if lab.url.startswith("sqlite"):
        path = Path(urlsplit(lab.url).path)
        copy = path.with_name("snapshot.db")

        def copy_database(source: Path, target: Path) -> None:
            with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
                src.backup(dst)  # the online backup API: a consistent copy, WAL or not

        def take() -> None:
            copy_database(path, copy)

        def restore() -> None:
            copy_database(copy, path)

        yield take, restore
        return
    server = request.getfixturevalue("postgres_server")
    database = urlsplit(lab.url).path.lstrip("/")
    snapshot = f"{database}_snap"

    def take_pg() -> None:
        server.admin.execute(f'CREATE DATABASE "{snapshot}" TEMPLATE "{database}"')

    def restore_pg() -> None:
        server.drop(database)
        server.admin.execute(f'CREATE DATABASE "{database}" TEMPLATE "{snapshot}"')

    try:
        yield take_pg, restore_pg
    finally:
        server.drop(snapshot)


def test_g_a_rollback_to_before_a_checkpoint(
    lab: SignedLab, request: pytest.FixtureRequest
) -> None:
    """(g) after the payment ran and a checkpoint was taken, the database is put back to a copy
    from before it ran: workers given the checkpoint refuse to start (the payment does not run
    twice), and verify --since names the item; without the checkpoint nothing looks wrong."""
    signed_approval(lab, "alice")
    assert signed_approval(lab, "bob").state.value == "approved"
    with snapshots(lab, request) as (take, restore):
        take()
        lab.work()
        assert lab.item().state.value == "completed"
        assert len(lab.executed()) == 1 and len(lab.remote_objects()) == 1
        checkpoint = lab.root / "checkpoint.json"
        lab.cli("checkpoint", "--key", str(lab.key_path("root")), "--out", str(checkpoint))
        restore()
    assert lab.item().state.value == "approved"  # rolled back: it would run again
    assert lab.verify()["ok"]  # every chain is consistent on its own
    done = lab.work("--since", str(checkpoint), "--json", ok=(3,))
    assert "checkpoint_rollback" in done.stdout
    lab.work("--json", ok=(3,), env={"STOPLINE_CHECKPOINT": str(checkpoint)})
    assert len(lab.executed()) == 1 and len(lab.remote_objects()) == 1
    report = lab.verify("--since", str(checkpoint))
    assert not report["ok"]
    assert named(report, lab.item().id, "checkpoint_rollback")


class ForgedApproval(ApprovalPolicy):
    """An approval policy that needs no approval, under the real policy's version."""

    def __init__(self, version: str, **rules: Any) -> None:
        super().__init__(**rules)
        self.__dict__["version"] = version  # what a forger writes into the proposal


def test_a_forged_proposal_that_needs_no_approval(lab: SignedLab) -> None:
    """A new item written with stopline's own core and a proposal that names the real
    policy's version but needs no approval reaches approved with no person's command at all;
    the worker, holding the automation's real policy, refuses to run it."""
    now = utcnow()
    with lab.store() as store:
        real = store.policy("pay")
        assert real is not None
        rule = ApprovalRule(roles=("approver",), approvals=0, max_evidence_age=3600)
        forged = replace(real, approval=ForgedApproval(real.approval.version, rules={"pay": rule}))
        ctx = Context(now, forged)
        found = decide(None, Discover("pay-forged", "pay", "forged"), ctx)
        assert found.after is not None and store.insert(found)
        item = store.claim("forger", now, 30.0, ["pay"])
        assert item is not None and item.key == "forged"
        evidence = {"account": "forged", "balance": 1}
        observed = decide(item, Observe("forger", item.lease_token, evidence, now), ctx)
        assert observed.after is not None and store.apply(observed)
        item = store.claim("forger", now, 30.0, ["pay"])
        assert item is not None and item.key == "forged"
        params = {"amount": 1_000_000, "to": "forged"}
        proposed = decide(item, Propose("forger", item.lease_token, "pay", "forged", params), ctx)
        assert proposed.after is not None and store.apply(proposed)
    forged_item = lab.item("forged")
    assert forged_item.state.value == "approved"
    assert forged_item.doc("proposal")["required_approvals"] == 0
    lab.work()
    assert lab.item("forged").state.value == "awaiting_approval"
    with lab.store() as store:
        assert "policy_changed" in store.history(forged_item.id)[-1].reasons
    nothing_executed(lab)
