"""What an operator command sends to the target comes from the record its check verified.

``publish`` and ``reconcile`` check the record (its seal, the registry, the signature, the
core's rules) before each remote call. Someone with the database who forges the record before
the command reads it, and puts it back the moment before the check (which then passes), must
not get a remote call made on what they forged."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from integrity.attacker import Attacker
from stopline.controller import Controller
from stopline.core.artifacts import Artifact
from stopline.core.commands import Command
from stopline.core.decision import Decision
from stopline.runtime.operations import publish, reconcile
from stopline.store import open_store

from .apps.digest_app import CONFIG_ENV
from .conftest import APP, ITEM, Env


class PutBackFirst(Controller):
    """The command layer, with the forged record put back just before each check."""

    genuine: dict[str, Any]
    attacker: Attacker

    def preview(self, ref: str, command: Command) -> Decision:
        self.attacker.put_data(ITEM, self.genuine)
        return super().preview(ref, command)


def test_publish_calls_only_what_its_check_verified(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first object's remote id is forged to name an object no review covered, and put
    back before the check: publish publishes the reviewed objects, never the other one."""
    env.configure(mode="publish")
    monkeypatch.setenv(CONFIG_ENV, json.dumps(env.config))
    packet = env.deliver()["review_packet"]["digest"]
    env.applied("review", ITEM, "--packet", packet, "--verdict", "approve", "--actor", "olga")
    unreviewed = Artifact(key="x", title="Not reviewed", summary="-", body="nobody saw this")
    other = env.site.target().create(unreviewed, "an-object-of-nobody's-review")
    attacker = Attacker(env.url)
    store = open_store(env.url)
    try:
        genuine = attacker.data(ITEM)
        forged = copy.deepcopy(genuine)
        forged["artifacts"][0].update(remote_id=other.remote_id, remote_version=other.version)
        attacker.put_data(ITEM, forged)
        commands = PutBackFirst(store)
        commands.genuine, commands.attacker = genuine, attacker
        decision = publish(commands, ITEM, packet=packet, actor="pete", app_spec=APP)
    finally:
        store.close()
        attacker.close()
    published = [c["arg"] for c in env.calls("publish")]
    assert other.remote_id not in published
    assert decision.applied and sorted(published) == sorted(
        a["remote_id"] for a in env.show()["artifacts"]
    )


def test_reconcile_looks_up_only_the_key_its_check_verified(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """article-2 went missing during a revision and came back. Its idempotency key is forged
    to the key of another object with the same content (someone else's), and put back before
    the check: reconcile finds and binds article-2's own object, never the other."""
    monkeypatch.setenv(CONFIG_ENV, json.dumps(env.config))
    env.deliver()
    attacker = Attacker(env.url)
    store = open_store(env.url)
    try:
        genuine = attacker.data(ITEM)
        own = next(a for a in genuine["artifacts"] if a["key"] == "article-2")
        env.site.hide(own["remote_id"])
        env.applied(*env.revise(), state="revision_prepared")
        env.work()
        assert env.show()["state"] == "revision_failed"
        env.site.restore(own["remote_id"])
        content = Artifact.from_plain(own["content"])
        impostor = env.site.target().create(content, "someone-else's-key")
        genuine = attacker.data(ITEM)
        forged = copy.deepcopy(genuine)
        for record in forged["artifacts"]:
            if record["key"] == "article-2":
                record["idempotency_key"] = "someone-else's-key"
        attacker.put_data(ITEM, forged)
        commands = PutBackFirst(store)
        commands.genuine, commands.attacker = genuine, attacker
        decision = reconcile(commands, ITEM, key="article-2", actor="olga", app_spec=APP)
    finally:
        store.close()
        attacker.close()
    bound = {a["key"]: a["remote_id"] for a in env.show()["artifacts"]}
    assert decision.applied and bound["article-2"] == own["remote_id"] != impostor.remote_id
