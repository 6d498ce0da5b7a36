"""Approval racing an edit: two `stopline` processes started at the same moment, many rounds."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest

from .conftest import RACE_CLI, Env

BATCH = 6


def start(env: Env, at: float, *args: str) -> subprocess.Popen[str]:
    argv = [sys.executable, str(RACE_CLI), repr(at), *args, "--db", env.url, "--json"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode in (0, 3), err
    doc: dict[str, Any] = json.loads(out)
    assert (proc.returncode == 0) == (doc["decision"] == "applied"), doc
    return doc


@pytest.mark.parametrize("approvals", [1, 2])
def test_approval_racing_an_edit(env: Env, approvals: int) -> None:
    """Never both applied against the old digest; approvals only ever carry the current digest."""
    race(env, approvals, rounds=BATCH)


@pytest.mark.slow
@pytest.mark.parametrize("approvals", [1, 2])
def test_approval_racing_an_edit_many_rounds(env: Env, approvals: int) -> None:
    """The same race, five times as many rounds."""
    race(env, approvals, rounds=5 * BATCH)


def race(env: Env, approvals: int, rounds: int) -> None:
    keys = [f"r{n}" for n in range(rounds)]
    items = env.setup(keys=keys, approvals=approvals)
    outcomes: set[tuple[str, str]] = set()
    for first in range(0, rounds, BATCH):
        batch = keys[first : first + BATCH]
        old = {key: env.digest(items[key]["id"]) for key in batch}
        at = time.time() + 1.5  # every process has imported stopline by then
        procs = []
        for n, key in enumerate(batch):
            ref = items[key]["id"]
            skew = (n % 3 - 1) * 0.002  # the edit a little before, with, or after the approval
            approve = start(env, at, "approve", ref, "--proposal", old[key], "--actor", "bob")
            params = json.dumps({"amount": 50 + n, "to": key})
            edit = start(env, at + skew, "edit", ref, "--actor", "carol", "--params", params)
            procs.append((key, approve, edit))
        for key, approve_proc, edit_proc in procs:
            a, e = finish(approve_proc), finish(edit_proc)
            outcomes.add((a["decision"], e["decision"]))
            check_round(env, items[key]["id"], old[key], a, e, approvals)
    assert ("refused", "refused") not in outcomes
    # whatever was approved executes against its current digest only
    env.work()
    final = {key: env.show(items[key]["id"]) for key in keys}
    ran = {e["item"]: e["digest"] for e in env.executions()}
    assert len(ran) == len(env.executions())
    assert ran == {
        v["id"]: v["proposal"]["digest"] for v in final.values() if v["state"] == "completed"
    }
    assert all(v["state"] in ("completed", "awaiting_approval") for v in final.values())


def check_round(
    env: Env, ref: str, old: str, a: dict[str, Any], e: dict[str, Any], approvals: int
) -> None:
    view = env.show(ref)
    proposal = view["proposal"]
    assert all(x["digest"] == proposal["digest"] for x in proposal["approvals"]), proposal
    history = env.history(ref)
    approve_events = [x for x in history if x["command"] == "approve"]
    edit_events = [x for x in history if x["command"] == "edit"]
    assert all(x["digests"]["proposal"] == old for x in approve_events)
    assert a["decision"] == "applied" or e["decision"] == "applied", (a, e)
    if e["decision"] == "applied":
        assert proposal["digest"] != old
        assert proposal["approvals"] == []
        (edit,) = edit_events
        assert edit["digests"]["previous"] == old
        if a["decision"] == "applied":  # the approval came first and the edit voided it
            (approval,) = approve_events
            assert approval["seq"] < edit["seq"]
            assert edit["detail"]["voided_approvals"] == ["bob"]
            assert approvals == 2, "an edit applied to an approved item"
        else:
            assert set(a["reasons"]) <= {"proposal_digest_mismatch", "stale_version"}, a
            assert a["reasons"], a
            assert approve_events == []
    else:
        assert e["reasons"] and set(e["reasons"]) <= {"illegal_transition", "stale_version"}, e
        assert edit_events == []
        assert proposal["digest"] == old
        assert [x["actor"] for x in proposal["approvals"]] == ["bob"]
        assert view["state"] == ("approved" if approvals == 1 else "awaiting_approval")
