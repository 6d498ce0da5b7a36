"""Digests anyone can recompute: from the output of `stopline show --json` and `stopline history
--json` alone, with an independent RFC 8785 implementation (the rfc8785 package) and hashlib.

Nothing from stopline is imported here: the commands run as separate processes, and the
recomputation uses only what they print.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import rfc8785

CLI = [sys.executable, "-m", "stopline.cli.main"]
# Shown with the proposal but not covered by its digest (docs/records.md, "What each digest covers").
VIEW_ONLY = ("digest", "approvals", "covers", "approvals_text", "outlook")
# Floats whose RFC 8785 form differs from Python's repr, and keys whose UTF-16 order differs
# from code-point order: U+1F600 sorts before U+FB33 in RFC 8785, after it by code point.
EDITED_PARAMS = {
    "ratio": 1.0,
    "tiny": 1e-7,
    "big": 1e21,
    "small": 0.00001,
    "\ufb33": 1,
    "\U0001f600": 2,
}


def sha256_jcs(value: Any) -> str:
    return hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def sha256_legacy(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stopline(tmp_path: Path, db: str, *argv: str) -> Any:
    """Run one stopline command in its own process and parse what it prints."""
    env = {**os.environ, "STOPLINE_DEMO_DRAFTS": str(tmp_path / "drafts")}
    done = subprocess.run(
        [*CLI, *argv, "--json", "--db", db],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def check_event_chain(events: list[dict[str, Any]]) -> None:
    """Every event's hash is sha256 of the RFC 8785 text of all its other fields, chained."""
    prev = ""
    for event in events:
        body = {k: v for k, v in event.items() if k != "hash"}
        assert body["prev_hash"] == prev, event
        assert sha256_jcs(body) == event["hash"], event
        prev = event["hash"]


def test_proposal_digests_and_event_hashes_recompute_from_cli_output(tmp_path: Path) -> None:
    """From show/history output alone, rfc8785 + hashlib give every proposal, evidence and event
    digest of every demo item, including a proposal edited to hold floats and astral keys."""
    db = f"sqlite:///{tmp_path / 'demo.db'}"
    items = stopline(tmp_path, db, "demo")["items"]
    proposed = [i for i in items if i["proposal_digest"]]
    assert proposed, "the demo leaves an item awaiting approval"
    edited_id = proposed[0]["id"]
    stopline(
        tmp_path, db, "edit", edited_id, "--actor", "alice", "--params", json.dumps(EDITED_PARAMS)
    )

    proposals = events = 0
    for item in items:
        shown = stopline(tmp_path, db, "show", item["id"])
        history = stopline(tmp_path, db, "history", item["id"])["events"]
        assert len(history) == shown["history_length"]
        check_event_chain(history)
        events += len(history)
        evidence = shown.get("evidence")
        if evidence:
            covered = {"data": evidence["data"], "observed_at": evidence["observed_at"]}
            assert sha256_jcs(covered) == evidence["digest"]
        proposal = shown.get("proposal")
        if proposal:
            covered = {k: v for k, v in proposal.items() if k not in VIEW_ONLY}
            assert sorted(covered) == proposal["covers"]
            assert sha256_jcs(covered) == proposal["digest"]
            proposals += 1
            if item["id"] == edited_id:
                assert proposal["params"] == EDITED_PARAMS
                text = rfc8785.dumps(proposal["params"]).decode("utf-8")
                assert text == (
                    '{"big":1e+21,"ratio":1,"small":0.00001,"tiny":1e-7,"\U0001f600":2,"\ufb33":1}'
                )
                # The old canonical form gives another digest for it: the check can fail.
                assert sha256_legacy(covered) != proposal["digest"]
    assert proposals >= 1 and events >= 2 * len(items)
