"""``publish`` and ``reconcile`` when the target or the authority behind them gives way part of
the way through (runtime/operations.py): a publisher revoked between two publication calls,
a target that fails, no target at all. Each is refused, and nothing is recorded as done."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from stopline.controller import Controller
from stopline.core.decision import Outcome
from stopline.runtime import operations
from stopline.runtime.operations import publish, reconcile, target_for
from stopline.store import Store, open_store
from stopline.targets.base import RemoteRef, TargetError

from .apps.digest_app import CONFIG_ENV
from .conftest import APP, ITEM, Env


@pytest.fixture
def approved(env: Env, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Store, str]]:
    """Mode publish, delivered, its review approved by olga; pete may publish."""
    env.configure(mode="publish")
    monkeypatch.setenv(CONFIG_ENV, json.dumps(env.config))
    packet = env.deliver()["review_packet"]["digest"]
    env.applied("review", ITEM, "--packet", packet, "--verdict", "approve", "--actor", "olga")
    store = open_store(env.url)
    try:
        yield store, packet
    finally:
        store.close()


class Publishing:
    """The app's own target, with ``then`` run after each publication call it makes."""

    def __init__(self, real: Any, then: Any) -> None:
        self.real, self.then, self.published = real, then, []

    def publish(self, ref: RemoteRef) -> str:
        signal = self.real.publish(ref)
        self.published.append(ref.remote_id)
        self.then()
        return str(signal)


def test_a_publisher_revoked_between_two_publication_calls_publishes_nothing_more(
    env: Env, approved: tuple[Store, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """pete loses the role right after the first object is published: the check made again
    before the next call refuses, the second object is never published and no publication is
    recorded."""
    store, packet = approved
    commands = Controller(store, trust=None)
    target = Publishing(
        target_for(commands, "digest", APP), lambda: commands.revoke_actor("pete", "publisher")
    )
    monkeypatch.setattr(operations, "target_for", lambda *args: target)
    decision = publish(commands, ITEM, packet=packet, actor="pete", app_spec=APP)
    assert decision.outcome is Outcome.REFUSED and "actor_not_authorized" in decision.reasons
    assert len(target.published) == 1 < len(env.show()["artifacts"])
    assert not env.show().get("publication")


class Failing:
    def publish(self, ref: RemoteRef) -> str:
        raise TargetError("the server answered 503")


@pytest.mark.parametrize("target", [None, Failing()], ids=["no target", "failing target"])
def test_a_publication_with_no_target_or_a_failing_one_is_refused_and_not_recorded(
    env: Env, approved: tuple[Store, str], monkeypatch: pytest.MonkeyPatch, target: Any
) -> None:
    store, packet = approved
    monkeypatch.setattr(operations, "target_for", lambda *args: target)
    decision = publish(Controller(store, trust=None), ITEM, packet=packet, actor="pete")
    assert decision.outcome is Outcome.REFUSED and "target_unavailable" in decision.reasons
    assert not env.show().get("publication")


def test_a_reconcile_with_no_target_is_refused_as_target_unavailable(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """article-2 went missing during a revision and is back; with no target to look in, the
    refusal says so (``target_unavailable``), not that nothing was found."""
    monkeypatch.setenv(CONFIG_ENV, json.dumps(env.config))
    missing = next(a for a in env.deliver()["artifacts"] if a["key"] == "article-2")
    env.site.hide(missing["remote_id"])
    env.applied(*env.revise(), state="revision_prepared")
    env.work()
    assert env.show()["state"] == "revision_failed"
    env.site.restore(missing["remote_id"])
    monkeypatch.setattr(operations, "target_for", lambda *args: None)
    store = open_store(env.url)
    try:
        decision = reconcile(Controller(store, trust=None), ITEM, key="article-2", actor="olga")
    finally:
        store.close()
    assert decision.outcome is Outcome.REFUSED and list(decision.reasons) == ["target_unavailable"]
