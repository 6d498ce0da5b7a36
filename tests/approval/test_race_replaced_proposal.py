"""Approvals racing a proposal being replaced, on both stores, with real concurrency.

Each round, for every item awaiting approval, an approver's approval of the digest they read
and a command that replaces the proposal (an operator's ``edit``, a ``reinspect`` after which a
worker proposes again, a rejection that sends it back to be proposed again) are sent at the same
moment from their own threads and connections, while a ``stopline run`` worker process works
the same items. Nothing here asserts timing: whatever interleaving happened, the invariants are
checked afterwards on the records, the history and the execute hook's own log:

* every execution ran the proposal whose digest the history executed, and that digest was
  approved, after it was proposed and before it ran, by enough approvers who hold the role
  and did not propose or edit it;
* an approval never names a digest other than the proposal current when it was recorded;
* each item ran at most once, and ``stopline verify`` finds nothing.

The same race runs in signed mode too: every person's command signed with their own key,
certified by a trust root the worker, the controllers and ``verify`` are configured with.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stopline.controller import Controller, utcnow
from stopline.core.records import Event
from stopline.runtime.runner import run
from stopline.store import open_store
from stopline.trust import admin
from stopline.trust.authority import Trust
from stopline.trust.keys import KeySigner

from .apps.refund_app import ACTORS, CONFIG_ENV, LOG_ENV, build_app, read_log
from .conftest import APP_FILE, STOPLINE

REPLACES = ("edit", "reinspect", "reject")
PROPOSES = ("propose", "edit")
APPROVERS = frozenset(n for n, roles in ACTORS.items() if "approver" in roles)


@pytest.mark.parametrize("approvals", [1, 2])
def test_an_approval_never_applies_to_the_proposal_that_replaced_its_own(
    store_url: str, tmp_path: Path, approvals: int
) -> None:
    race(store_url, tmp_path, approvals, items=6, rounds=3)


@pytest.mark.slow
@pytest.mark.parametrize("approvals", [1, 2])
def test_an_approval_never_applies_to_the_proposal_that_replaced_its_own_many_rounds(
    store_url: str, tmp_path: Path, approvals: int
) -> None:
    race(store_url, tmp_path, approvals, items=9, rounds=10)


@pytest.mark.parametrize("approvals", [1, 2])
def test_in_signed_mode_an_approval_never_applies_to_the_proposal_that_replaced_its_own(
    store_url: str, tmp_path: Path, approvals: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = Keys.certified(store_url)
    # the host's configuration: the in-process runs, the worker process and verify read it
    monkeypatch.setenv("STOPLINE_TRUST_ROOT", keys.root.public_key.line)
    race(store_url, tmp_path, approvals, items=6, rounds=3, keys=keys)


class Keys:
    """A trust root and a key of each person, certified with their roles in the store."""

    def __init__(self) -> None:
        self.root = KeySigner.generate()
        self.people = {name: KeySigner.generate() for name in ACTORS}
        self.trust = Trust((self.root.public_key,))

    @classmethod
    def certified(cls, url: str) -> Keys:
        keys = cls()
        store = open_store(url)
        try:
            for name, roles in ACTORS.items():
                key = keys.people[name].public_key
                admin.certify(store, keys.root, name, key, roles=roles, now=utcnow())
        finally:
            store.close()
        return keys


def race(
    url: str, tmp: Path, approvals: int, *, items: int, rounds: int, keys: Keys | None = None
) -> None:
    log = tmp / "hooks.jsonl"
    config = {"keys": [f"r{n}" for n in range(items)], "approvals": approvals}
    app = build_app(log, **config)  # type: ignore[arg-type]
    run(app, url, once=True, linger=0)
    for number in range(rounds):
        waiting = awaiting(url)
        if not waiting:
            break
        if approvals == 2:  # one approval in already: the race is for the second
            with opened(url, keys, "erin") as controller:
                for item_id, digest in waiting.items():
                    controller.approve(item_id, proposal=digest, actor="erin")
        one_round(url, log, config, waiting, number, keys)
        run(app, url, once=True, linger=0)  # whatever is due now: proposals, executions
    run(app, url, once=True, linger=0)
    check(url, log, approvals, keys)


class opened:
    """A store of its own and a controller on it, closed on exit: in unsigned mode, or with
    ``keys`` in signed mode, signing as ``actor``."""

    def __init__(self, url: str, keys: Keys | None = None, actor: str | None = None) -> None:
        self.store = open_store(url)
        self.keys, self.actor = keys, actor

    def __enter__(self) -> Controller:
        if self.keys is None:
            return Controller(self.store, trust=None)
        signer = self.keys.people[self.actor] if self.actor is not None else None
        return Controller(self.store, trust=self.keys.trust, signer=signer)

    def __exit__(self, *exc: object) -> None:
        self.store.close()


def awaiting(url: str) -> dict[str, str]:
    """Each item awaiting approval, with its proposal's digest."""
    with opened(url) as controller:
        found = controller.store.list_items(state="awaiting_approval")
        return {i.id: str(i.doc("proposal")["digest"]) for i in found}


def one_round(
    url: str,
    log: Path,
    config: dict[str, Any],
    waiting: dict[str, str],
    number: int,
    keys: Keys | None,
) -> None:
    """For every waiting item, its approval and a replacement at once, a worker running."""
    calls: list[tuple[str, Callable[[Controller], Any]]] = []
    for n, (item_id, digest) in enumerate(sorted(waiting.items())):
        calls.append(("bob", lambda c, i=item_id, d=digest: c.approve(i, proposal=d, actor="bob")))
        calls.append(("carol", replacement(REPLACES[(n + number) % len(REPLACES)], item_id)))
    start = threading.Barrier(len(calls) + 1)
    failures: list[BaseException] = []

    def go(actor: str, call: Callable[[Controller], Any]) -> None:
        try:
            with opened(url, keys, actor) as controller:
                start.wait(timeout=120)
                call(controller)
        except BaseException as exc:  # reported by the test, below
            failures.append(exc)

    threads = [threading.Thread(target=go, args=call) for call in calls]
    for thread in threads:
        thread.start()
    env = {**os.environ, LOG_ENV: str(log), CONFIG_ENV: json.dumps(config)}
    argv = [str(STOPLINE), "run", f"{APP_FILE}:app", "--once", "--linger", "0.5", "--db", url]
    worker = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    start.wait(timeout=120)
    for thread in threads:
        thread.join(timeout=300)
    _, err = worker.communicate(timeout=300)
    assert worker.returncode == 0, err.decode()
    assert not failures, failures


def replacement(kind: str, item_id: str) -> Callable[[Controller], Any]:
    if kind == "edit":
        return lambda c: c.edit(item_id, actor="carol", params={"amount": 11, "to": item_id})
    if kind == "reinspect":
        return lambda c: c.reinspect(item_id, actor="carol", reason="fresh evidence")
    return lambda c: c.reject(item_id, actor="carol", reason="not this one", send_back=True)


def check(url: str, log: Path, approvals: int, keys: Keys | None) -> None:
    executed = [e for e in read_log(log) if e["hook"] == "execute"]
    with opened(url, keys) as controller:
        store = controller.store
        histories = {i.id: store.history(i.id) for i in store.list_items()}
        for item_id, events in histories.items():
            ran = [e for e in executed if e["item"] == item_id]
            runs = check_history(events, approvals)
            assert [e["digest"] for e in ran] == runs, (item_id, ran, runs)
            assert len(runs) <= 1, item_id
            if runs:
                item = store.get(item_id)
                assert item is not None and item.state.value == "completed"
                proposal = item.doc("proposal")
                assert proposal["digest"] == runs[0]
                assert ran[0]["params"] == dict(proposal["params"])
    assert executed, "nothing ran: the race tried nothing"
    report = subprocess.run(
        [str(STOPLINE), "verify", "--db", url, "--json"], capture_output=True, text=True
    )
    assert report.returncode == 0, report.stdout


def check_history(events: list[Event], approvals: int) -> list[str]:
    """Replay one item's history: every approval names the current proposal, every execution
    follows enough approvals of the digest it executes. The digests executed, in order."""
    current: str | None = None
    proposer: set[str] = set()
    approved: list[str] = []
    runs: list[str] = []
    for event in events:
        digest = event.digests.get("proposal")
        if event.command in PROPOSES:
            current, approved = str(digest), []
            proposer = proposer | {event.actor} if event.command == "edit" else {event.actor}
        elif event.command in ("reinspect", "reject"):
            current, approved, proposer = None, [], set()
        elif event.command == "approve":
            assert digest == current, (event.seq, digest, current)
            assert event.actor in APPROVERS and event.actor not in proposer, event
            approved.append(event.actor)
        elif event.command == "execute":
            assert digest == current, (event.seq, digest, current)
            assert len(set(approved)) >= approvals, (event.seq, approved)
            assert set(event.detail["approvers"]) <= set(approved), event
            runs.append(str(digest))
    return runs
