"""Signed mode end to end: two people sign a two-approver item (one with --key, one through
ssh-agent), real worker processes execute it exactly once, and verify is clean."""

from __future__ import annotations

from stopline.trust.documents import Signed

from .agentkit import RunningAgent
from .signedlab import SignedLab


def test_two_signed_approvals_execute_once(lab: SignedLab, ssh_agent: RunningAgent) -> None:
    """alice signs with --key, bob's key is found in ssh-agent; the worker executes once."""
    digest = lab.digest()
    done = lab.cli_json(
        "approve",
        "pay/k1",
        "--proposal",
        digest,
        "--actor",
        "alice",
        "--key",
        str(lab.key_path("alice")),
    )
    assert (done["decision"], done["state"]) == ("applied", "awaiting_approval")
    ssh_agent.add(lab.key_path("bob"))
    done = lab.cli_json(
        "approve",
        "pay/k1",
        "--proposal",
        digest,
        "--actor",
        "bob",
        env={"SSH_AUTH_SOCK": ssh_agent.sock},
    )
    assert (done["decision"], done["state"]) == ("applied", "approved")
    lab.work()
    lab.work()  # a second pass finds nothing more to do
    assert lab.item().state.value == "completed"
    assert [e["digest"] for e in lab.executed()] == [digest]
    assert len(lab.remote_objects()) == 1
    approvals = lab.item().doc("proposal")["approvals"]
    signers = {
        a["actor"]: Signed.from_plain(a["attestation"]).public_key.fingerprint for a in approvals
    }
    assert signers == {
        "alice": lab.keys["alice"].public_key.fingerprint,
        "bob": lab.keys["bob"].public_key.fingerprint,
    }
    report = lab.verify()
    assert report["ok"], report["problems"]


def test_without_a_key_a_person_command_is_refused(lab: SignedLab) -> None:
    """In signed mode a command with no key (and no agent) is refused signature_invalid and
    writes nothing but the refusal; a key in unsigned mode is accepted and not used, with a
    note."""
    done = lab.cli(
        "approve", "pay/k1", "--proposal", lab.digest(), "--actor", "alice", "--json", ok=(3,)
    )
    assert '"signature_invalid"' in done.stdout
    assert lab.item().seq == 3  # discover, observe, propose
    unsigned = lab.cli(
        "approve",
        "pay/k1",
        "--proposal",
        lab.digest(),
        "--actor",
        "alice",
        signed=False,
        env={"STOPLINE_KEY": str(lab.key_path("alice"))},
        ok=(3,),
    )
    assert "unsigned mode" in unsigned.stderr and "the key is not used" in unsigned.stderr
    assert "actor_unknown" in unsigned.stdout  # decided as any unsigned command is


def test_a_signed_note_verifies(lab: SignedLab) -> None:
    """In signed mode a note is signed like any person's command (alice, an approver, counts
    under her approver role), verify stays clean, and an unsigned note is refused."""
    unsigned = lab.cli("note", "pay/k1", "--body", "x", "--actor", "alice", "--json", ok=(3,))
    assert "signature_invalid" in unsigned.stdout
    done = lab.cli_json(
        "note",
        "pay/k1",
        "--body",
        "checked with finance",
        "--actor",
        "alice",
        "--author-kind",
        "ai",
        "--author-name",
        "helper-7",
        "--author-family",
        "example-family",
        "--key",
        str(lab.key_path("alice")),
    )
    assert (done["decision"], done["state"]) == ("applied", "awaiting_approval")
    history = lab.cli_json("history", "pay/k1")["events"]
    note = history[-1]
    assert note["command"] == "note" and "attestation" in note["detail"]
    assert note["detail"]["author"]["kind"] == "ai"
    report = lab.verify()
    assert report["ok"], report["problems"]


def test_a_signed_command_records_only_the_roles_its_actor_holds(lab: SignedLab) -> None:
    """carol, certified operator only, rejects: a reject counts under the operator role or
    the proposal's approver roles, and her attestation records the one of them she holds,
    never a role she was not certified for; it is signed at the time of the decision."""
    done = lab.cli_json(
        "reject",
        "pay/k1",
        "--reason",
        "not this month",
        "--actor",
        "carol",
        "--key",
        str(lab.key_path("carol")),
    )
    assert done["decision"] == "applied"
    event = lab.cli_json("history", "pay/k1")["events"][-1]
    assert event["command"] == "reject"
    attestation = Signed.from_plain(event["detail"]["attestation"])
    assert list(attestation.body["roles"]) == ["operator"]
    assert attestation.body["at"] == event["at"]  # signed when it was decided
    report = lab.verify()
    assert report["ok"], report["problems"]
