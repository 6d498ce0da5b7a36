"""``stopline demo --signed`` and the host's mode in ``show``."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

from .signedlab import CLI, SignedLab, clean_environ


def stopline(cwd: Path, *args: str, env: dict[str, str] | None = None, ok: int = 0) -> str:
    done = subprocess.run(
        [*CLI, *args],
        cwd=cwd,
        env={**clean_environ(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == ok, f"{args} exited {done.returncode}: {done.stderr[-3000:]}"
    return done.stdout


def test_the_signed_demo_walks_the_approvals_signed(tmp_path: Path) -> None:
    """demo --signed makes a trust root and the people's keys in the folder it names, signs
    the same approvals, and bob's pasted command (with the host's trust root) finishes the
    restart; verify is clean in signed mode."""
    text = stopline(tmp_path, "demo", "--signed", "--linger", "0.5")
    keys = tmp_path / "stopline-demo-keys"
    for name in ("root", "alice", "bob", "carol", "dana"):
        assert stat.S_IMODE((keys / name).stat().st_mode) == 0o600
    assert "Signed mode" in text and "--key stopline-demo-keys/alice" in text
    bob = next(line for line in text.splitlines() if "--actor bob --key" in line).split("$ ")[1]
    host = {"STOPLINE_TRUST_ROOT": str(keys / "root.pub")}
    listed = json.loads(stopline(tmp_path, "keys", "list", "--json", env=host))
    assert sorted(c["actor"] for c in listed["certificates"] if c["status"] == "live") == [
        "alice",
        "bob",
        "carol",
        "dana",
    ]
    done = subprocess.run(
        [*CLI, *bob.split()[1:], "--json"],
        cwd=tmp_path,
        env={**clean_environ(), **host},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(done.stdout)["state"] == "approved", done.stderr
    stopline(tmp_path, "run", "stopline.examples.demo:app", "--once", "--linger", "0.5", env=host)
    shown = json.loads(
        stopline(tmp_path, "show", "service-health/checkout-api", "--json", env=host)
    )
    assert shown["state"] == "completed" and shown["mode"] == "signed"
    assert json.loads(stopline(tmp_path, "verify", "--json", env=host))["ok"]
    root = (keys / "root").read_bytes()
    again = stopline(tmp_path, "demo", "--signed", "--db", "sqlite:///other.db", "--linger", "0.5")
    assert "Signed mode" in again  # a second run, on a fresh database, reuses the keys
    assert (keys / "root").read_bytes() == root


def test_the_signed_demo_refuses_an_unsigned_demo_database(tmp_path: Path) -> None:
    """On a database that already holds the unsigned demo, demo --signed exits 2 and says
    where to run it."""
    stopline(tmp_path, "demo", "--linger", "0.2")
    done = subprocess.run(
        [*CLI, "demo", "--signed"],
        cwd=tmp_path,
        env=clean_environ(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "fresh database" in done.stderr


def test_show_says_which_mode_the_host_is_in(tmp_path: Path) -> None:
    """show (text and --json) names the mode; in unsigned mode the text says that the database
    is the trust boundary and points to docs/security.md."""
    lab = SignedLab(tmp_path, f"sqlite:///{tmp_path / 'stopline.db'}")
    lab.certify_people()
    lab.work()
    signed = lab.cli("show", "pay/k1").stdout
    assert "mode: signed" in signed and lab.keys["root"].public_key.fingerprint in signed
    assert lab.cli_json("show", "pay/k1")["mode"] == "signed"
    unsigned = lab.cli("show", "pay/k1", signed=False).stdout
    assert "mode: unsigned" in unsigned
    assert "whoever can write it can approve" in unsigned and "docs/security.md" in unsigned
    assert lab.cli_json("show", "pay/k1", signed=False)["mode"] == "unsigned"


def test_a_malformed_trust_root_is_a_usage_error(tmp_path: Path) -> None:
    """A STOPLINE_TRUST_ROOT that names no readable ed25519 key is exit 2, never unsigned."""
    lab = SignedLab(tmp_path, f"sqlite:///{tmp_path / 'stopline.db'}")
    for value in ("ssh-ed25519 not-base64", str(tmp_path / "missing.pub"), "# only a comment"):
        done = lab.cli("items", env={"STOPLINE_TRUST_ROOT": value}, ok=(2,))
        assert "STOPLINE_TRUST_ROOT" in done.stderr, done.stderr
