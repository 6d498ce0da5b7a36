"""``stopline keys``: key pairs, certificates, revocation and rotation, and the actor registry
commands a host in signed mode refuses."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest

from stopline.trust.keys import KeySigner, PublicKey

from .signedlab import SignedLab


@pytest.fixture
def keylab(tmp_path: Path) -> SignedLab:
    """Keys on disk and an empty SQLite database; nobody certified yet."""
    return SignedLab(tmp_path, f"sqlite:///{tmp_path / 'stopline.db'}")


def keygen_fingerprint(pub: Path) -> str:
    done = subprocess.run(["ssh-keygen", "-lf", str(pub)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[1]


def test_create_root_writes_a_private_key_and_the_trust_root_line(keylab: SignedLab) -> None:
    """create-root writes PATH (0600, OpenSSH) and PATH.pub, prints the line for
    STOPLINE_TRUST_ROOT, touches no database and never overwrites a key."""
    out = keylab.root / "team-root"
    made = keylab.cli_json("keys", "create-root", "--out", str(out), signed=False)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    line = (keylab.root / "team-root.pub").read_text().strip()
    assert made["trust_root"] == line and line.startswith("ssh-ed25519 ")
    assert made["fingerprint"] == keygen_fingerprint(keylab.root / "team-root.pub")
    assert KeySigner.load(out).public_key == PublicKey.parse(line)
    assert not (keylab.root / "stopline.db").exists()
    again = keylab.cli("keys", "generate", "--out", str(out), signed=False, ok=(2,))
    assert "never overwritten" in again.stderr


def test_ssh_keygen_keys_are_read_and_named_as_ssh_keygen_names_them(keylab: SignedLab) -> None:
    """A key made by ssh-keygen -t ed25519 signs, and its fingerprint is ssh-keygen's."""
    path = keylab.root / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "me", "-f", str(path)], check=True
    )
    signer = KeySigner.load(path)
    pub = PublicKey.parse(path.with_name("id_ed25519.pub").read_text())
    assert signer.public_key == pub
    assert pub.fingerprint == keygen_fingerprint(path.with_name("id_ed25519.pub"))
    assert pub.verify(signer.sign(b"x"), b"x") and not pub.verify(signer.sign(b"x"), b"y")


def test_certify_list_rotate_and_revoke(keylab: SignedLab) -> None:
    """The root certifies alice, rotates her key (same roles, the old key revoked) and revokes
    the new one; list shows each certificate's status and the host's mode."""
    root = str(keylab.key_path("root"))
    alice_pub = f"{keylab.key_path('alice')}.pub"
    made = keylab.cli_json(
        "keys",
        "certify",
        "alice",
        "--key",
        alice_pub,
        "--role",
        "approver",
        "--role",
        "operator",
        "--days",
        "30",
        "--root",
        root,
    )
    assert made["roles"] == ["approver", "operator"] and made["expires_at"]
    listed = keylab.cli_json("keys", "list")
    assert listed["mode"] == "signed"
    assert [(c["actor"], c["status"]) for c in listed["certificates"]] == [("alice", "live")]
    new = keylab.root / "alice2"
    keylab.cli("keys", "generate", "--out", str(new))
    rotated = keylab.cli_json("keys", "rotate", "alice", "--key", f"{new}.pub", "--root", root)
    assert rotated["roles"] == ["approver", "operator"]
    assert rotated["revoked"] == [keylab.keys["alice"].public_key.fingerprint]
    statuses = {
        c["fingerprint"]: c["status"] for c in keylab.cli_json("keys", "list")["certificates"]
    }
    assert statuses == {
        keylab.keys["alice"].public_key.fingerprint: "revoked",
        rotated["fingerprint"]: "live",
    }
    actors = keylab.cli_json("actors", "list")["actors"]
    assert actors == [{"name": "alice", "roles": ["approver", "operator"], "active": True}]
    keylab.cli("keys", "revoke", "alice", "--key", rotated["fingerprint"], "--root", root)
    assert keylab.cli_json("actors", "list")["actors"] == []
    again = keylab.cli("keys", "revoke", "alice", "--root", root, "--json", ok=(3,))
    assert json.loads(again.stdout)["reasons"] == ["actor_unknown"]
    assert keylab.verify()["ok"]  # every registry document was signed by the root


def test_what_keys_certify_refuses(keylab: SignedLab) -> None:
    """A key that is no trust root of this host, a private key given as the key to certify, a
    key certified to someone else and a look-alike name are refused with exit 2; nothing is
    written."""
    root = str(keylab.key_path("root"))
    bob_pub = f"{keylab.key_path('bob')}.pub"
    not_root = keylab.cli(
        "keys",
        "certify",
        "bob",
        "--key",
        bob_pub,
        "--root",
        str(keylab.key_path("mallory")),
        ok=(2,),
    )
    assert "is not a trust root of this host" in not_root.stderr
    private = keylab.cli(
        "keys", "certify", "bob", "--key", str(keylab.key_path("bob")), "--root", root, ok=(2,)
    )
    assert "is a private key" in private.stderr
    keylab.cli("keys", "certify", "bob", "--key", bob_pub, "--role", "approver", "--root", root)
    taken = keylab.cli("keys", "certify", "carol", "--key", bob_pub, "--root", root, ok=(2,))
    assert "certified to bob" in taken.stderr
    alike = keylab.cli(
        "keys",
        "certify",
        "b0b",
        "--key",
        f"{keylab.key_path('carol')}.pub",
        "--root",
        root,
        ok=(2,),
    )
    assert "looks like" in alike.stderr
    assert len(keylab.cli_json("keys", "list")["certificates"]) == 1


def test_the_actor_registry_commands_in_signed_mode(keylab: SignedLab) -> None:
    """In signed mode actors add/revoke exit 2 pointing at keys certify/revoke; a token needs
    the actor's signature and then signs them in."""
    added = keylab.cli("actors", "add", "alice", "--role", "approver", ok=(2,))
    assert "stopline keys certify" in added.stderr
    revoked = keylab.cli("actors", "revoke", "alice", ok=(2,))
    assert "stopline keys revoke" in revoked.stderr
    root = str(keylab.key_path("root"))
    keylab.cli(
        "keys",
        "certify",
        "alice",
        "--key",
        f"{keylab.key_path('alice')}.pub",
        "--role",
        "approver",
        "--root",
        root,
    )
    unsigned = keylab.cli("actors", "token", "alice", ok=(2,))
    assert "sign the token's issue" in unsigned.stderr
    wrong = keylab.cli("actors", "token", "alice", "--key", str(keylab.key_path("bob")), ok=(2,))
    assert "not certified" in wrong.stderr
    token = keylab.cli_json("actors", "token", "alice", "--key", str(keylab.key_path("alice")))
    assert token["token"].startswith("stl_")
    nobody = keylab.cli("actors", "token", "erin", "--key", str(keylab.key_path("bob")), ok=(3,))
    assert "no active actor" in nobody.stdout


def test_a_protected_key_points_to_ssh_agent(keylab: SignedLab) -> None:
    """A passphrase-protected key with no terminal to ask on: exit 2 and how to use the agent."""
    path = keylab.root / "protected"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "secret words", "-f", str(path)], check=True
    )
    keylab.cli("migrate")
    done = keylab.cli(
        "approve", "x", "--proposal", "d" * 64, "--actor", "alice", "--key", str(path), ok=(2,)
    )
    assert "ssh-add" in done.stderr
