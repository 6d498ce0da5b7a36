"""``stopline checkpoint`` and ``verify --since``: who may sign one, where it goes, and what a
checkpoint file that was tampered with, or never signed, is worth."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from stopline.trust.documents import Signed
from webhook_receiver import Receiver

from .signedlab import SignedLab, execute_sql


@pytest.fixture
def cplab(tmp_path: Path) -> SignedLab:
    """A signed lab on SQLite with items k1 and k2 awaiting approval."""
    made = SignedLab(tmp_path, f"sqlite:///{tmp_path / 'stopline.db'}", item_keys=("k1", "k2"))
    made.certify_people()
    made.work()
    return made


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver(204)
    try:
        yield made
    finally:
        made.close()


def test_who_may_sign_a_checkpoint(cplab: SignedLab) -> None:
    """A root key or a key certified for checkpoint signs one; a person's signing key, no key
    at all, or an existing file is refused (exit 2), and nothing is written."""
    out = cplab.root / "cp.json"
    no_key = cplab.cli("checkpoint", "--out", str(out), ok=(2,))
    assert "sign the checkpoint" in no_key.stderr
    person = cplab.cli(
        "checkpoint", "--key", str(cplab.key_path("alice")), "--out", str(out), ok=(2,)
    )
    assert "certified for checkpoints" in person.stderr
    assert not out.exists()
    cplab.cli(
        "keys",
        "certify",
        "checkpointer",
        "--key",
        f"{cplab.key_path('mallory')}.pub",
        "--purpose",
        "checkpoint",
        "--root",
        str(cplab.key_path("root")),
    )
    made = cplab.cli_json("checkpoint", "--key", str(cplab.key_path("mallory")), "--out", str(out))
    assert made["items"] == 2 and made["signed_by"] == cplab.keys["mallory"].public_key.fingerprint
    doc = Signed.from_plain(json.loads(out.read_text()))
    assert doc.valid() and doc.kind == "stopline.checkpoint"
    again = cplab.cli(
        "checkpoint", "--key", str(cplab.key_path("root")), "--out", str(out), ok=(2,)
    )
    assert "never overwritten" in again.stderr
    report = cplab.verify("--since", str(out))
    assert report["ok"], report["problems"]


def test_a_checkpoint_to_a_webhook(cplab: SignedLab, receiver: Receiver) -> None:
    """--webhook POSTs the signed document; a receiver that refuses it is exit 1."""
    cplab.cli("checkpoint", "--key", str(cplab.key_path("root")), "--webhook", receiver.url)
    [(headers, body)] = receiver.received
    assert headers["content-type"] == "application/json"
    assert Signed.from_plain(json.loads(body)).valid()
    refusing = Receiver(500)
    try:
        done = cplab.cli(
            "checkpoint", "--key", str(cplab.key_path("root")), "--webhook", refusing.url, ok=(1,)
        )
        assert "answered 500" in done.stderr
    finally:
        refusing.close()


class Landing:
    """A server answering every GET with 200 (where a redirect points)."""

    def __init__(self) -> None:
        self.gets = 0
        landing = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                landing.gets += 1
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/elsewhere"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_checkpoint_redirected_elsewhere_is_not_delivered(cplab: SignedLab) -> None:
    """A receiver answering 302: the redirect was followed as a GET without the document, and
    the 200 there taken for its delivery (exit 0, "written to" the webhook). A redirect is an
    answer that is not 2xx: exit 1, and it is not followed."""
    landing = Landing()
    moved = Receiver(302, location=landing.url)
    try:
        done = cplab.cli(
            "checkpoint", "--key", str(cplab.key_path("root")), "--webhook", moved.url, ok=()
        )
        assert (done.returncode, moved.count(), landing.gets) == (1, 1, 0), done.stderr
        assert "answered 302" in done.stderr
    finally:
        moved.close()
        landing.close()


def test_a_doctored_or_unsigned_checkpoint(cplab: SignedLab) -> None:
    """A checkpoint edited after signing fails its signature; an unsigned one is a finding in
    signed mode and, in unsigned mode, compared with a warning that it could be forged."""
    out = cplab.root / "cp.json"
    cplab.cli("checkpoint", "--key", str(cplab.key_path("root")), "--out", str(out))
    doc = json.loads(out.read_text())
    doc["body"]["at"] = "2020-01-01T00:00:00.000000Z"  # what it covers, not a head
    doctored = cplab.root / "doctored.json"
    doctored.write_text(json.dumps(doc))
    report = cplab.verify("--since", str(doctored))
    assert [f["reason"] for f in report["findings"]] == ["signature_invalid"]
    unsigned = cplab.root / "unsigned.json"
    made = cplab.cli("checkpoint", "--out", str(unsigned), signed=False)
    assert "unsigned checkpoint" in made.stderr
    report = cplab.verify("--since", str(unsigned))
    assert [f["reason"] for f in report["findings"]] == ["signature_invalid"]
    done = cplab.cli("verify", "--since", str(unsigned), signed=False)
    assert "the checkpoint is unsigned" in done.stderr and done.stdout.startswith("ok")
    signed_in_unsigned_mode = cplab.cli("verify", "--since", str(out), signed=False)
    assert "not checked against a trust root" in signed_in_unsigned_mode.stderr
    bad = cplab.root / "bad.json"
    bad.write_text("[1, 2]")
    assert "is not a checkpoint" in cplab.cli("verify", "--since", str(bad), ok=(2,)).stderr


def test_a_deleted_item_is_named(cplab: SignedLab) -> None:
    """An item deleted after the checkpoint (the append-only trigger dropped first) is named
    checkpoint_item_missing."""
    out = cplab.root / "cp.json"
    cplab.cli("checkpoint", "--key", str(cplab.key_path("root")), "--out", str(out))
    gone = cplab.item("k2").id
    with cplab.store() as store:
        execute_sql(store, "DROP TRIGGER events_no_delete")
        execute_sql(store, "DELETE FROM events WHERE item_id = :id", {"id": gone})
        execute_sql(store, "DELETE FROM items WHERE id = :id", {"id": gone})
    report = cplab.verify("--since", str(out))
    assert {"kind": "item", "ref": gone, "reason": "checkpoint_item_missing"} in [
        {k: f[k] for k in ("kind", "ref", "reason")} for f in report["findings"]
    ]
