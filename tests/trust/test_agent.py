"""The ssh-agent client (stopline.trust.agent) against a real ssh-agent."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import T0
from stopline.trust.agent import Agent, AgentError, AgentSigner, signer_in_agent
from stopline.trust.authority import Authority
from stopline.trust.documents import CHECKPOINT_PURPOSE, SIGN, sign
from stopline.trust.keys import KeySigner
from stopline.trust.signers import SigningError, agent_signer_for, load_signer

from .agentkit import RunningAgent
from .certkit import HOUR, TRUST, certificate, revocation


def new_key(folder: Path, name: str) -> KeySigner:
    signer = KeySigner.generate()
    signer.save(folder / name, name)
    return signer


def test_the_agent_lists_its_ed25519_keys_and_signs(
    ssh_agent: RunningAgent, tmp_path: Path
) -> None:
    """Keys added with ssh-add are listed (an RSA key is skipped), and the agent's signature is
    the raw Ed25519 signature the key file makes, so a signed document verifies."""
    alice = new_key(tmp_path, "alice")
    ssh_agent.add(tmp_path / "alice")
    rsa = tmp_path / "rsa"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(rsa)], check=True
    )
    ssh_agent.add(rsa)
    agent = Agent(ssh_agent.sock)
    assert len(agent.identities()) == 2
    assert agent.ed25519_keys() == [alice.public_key]
    data = b"stopline signs this"
    assert agent.sign(alice.public_key, data) == alice.sign(data)  # Ed25519 is deterministic
    doc = sign({"kind": "stopline.attestation", "n": 1}, AgentSigner(agent, alice.public_key))
    assert doc.valid() and doc.public_key == alice.public_key


def test_a_key_the_agent_does_not_hold(ssh_agent: RunningAgent, tmp_path: Path) -> None:
    """A public key whose private half is not in the agent cannot sign, and says so."""
    bob = new_key(tmp_path, "bob")
    agent = Agent(ssh_agent.sock)
    with pytest.raises(AgentError, match="does not hold"):
        signer_in_agent(agent, bob.public_key)
    with pytest.raises(AgentError, match="would not sign"):
        agent.sign(bob.public_key, b"x")
    with pytest.raises(SigningError, match="does not hold"):
        load_signer(f"{tmp_path / 'bob'}.pub", agent=agent)


def test_a_public_key_names_the_agent_key_to_sign_with(
    ssh_agent: RunningAgent, tmp_path: Path
) -> None:
    """--key PATH.pub (or the line itself) signs through the agent; a private key file signs
    by itself; with no agent a public key cannot sign."""
    carol = new_key(tmp_path, "carol")
    ssh_agent.add(tmp_path / "carol")
    agent = Agent(ssh_agent.sock)
    for spec in (f"{tmp_path / 'carol'}.pub", carol.public_key.line):
        signer = load_signer(spec, agent=agent)
        assert isinstance(signer, AgentSigner) and signer.public_key == carol.public_key
    assert isinstance(load_signer(str(tmp_path / "carol")), KeySigner)
    with pytest.raises(SigningError, match="SSH_AUTH_SOCK"):
        load_signer(carol.public_key.line, agent=None)


def test_no_agent_listening(tmp_path: Path) -> None:
    """A socket nobody listens on is an AgentError, not a crash."""
    with pytest.raises(AgentError, match="ssh-agent at"):
        Agent(str(tmp_path / "nothing.sock")).identities()


def test_the_agent_key_chosen_for_an_actor_is_hers_live_and_for_the_purpose(
    ssh_agent: RunningAgent, tmp_path: Path
) -> None:
    """The agent holds bob's key, alice's revoked key, alice's checkpoint-only key and,
    added last, alice's live signing key: signing as alice picks the last one; as carol,
    whose key it does not hold, none."""
    keys = {name: new_key(tmp_path, name) for name in ("bob", "old", "keeper", "alice")}
    for name in keys:
        ssh_agent.add(tmp_path / name)
    authority = Authority.build(
        TRUST,
        [
            certificate("bob", keys["bob"], T0),
            certificate("alice", keys["old"], T0),
            # revoked with a date ahead: it already signs nothing
            revocation("alice", T0 + 5 * HOUR, key=keys["old"].public_key.fingerprint),
            certificate("alice", keys["keeper"], T0, purposes=(CHECKPOINT_PURPOSE,)),
            certificate("alice", keys["alice"], T0),
        ],
    )
    agent = Agent(ssh_agent.sock)
    now = T0 + 2 * HOUR
    chosen = agent_signer_for(agent, authority, "alice", now)
    assert chosen is not None and chosen.public_key == keys["alice"].public_key
    keeper = agent_signer_for(agent, authority, "alice", now, (CHECKPOINT_PURPOSE,))
    assert keeper is not None and keeper.public_key == keys["keeper"].public_key
    assert agent_signer_for(agent, authority, "carol", now, (SIGN,)) is None
