"""One remote object is held by one artifact of one item, across the whole store.

A target keeps one object per idempotency key, and nothing in one item's record kept a target
from answering two items with one object: a target that keeps objects by content bound the
identical notices of two items to one object, both completed, and a revision of the one then
rewrote the object the other's record said was read back as delivered. Now an item takes the
object before it binds it (``remote_holds``, keyed by the target's name and the remote id):
the first item to take it holds it for good, and any other item answered with it stops for a
person (``remote_object_held``) before anything is bound or updated. On both stores, a real
worker in process and a real directory target; the race on the store's own connections.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stopline import App, Artifact, Automation, RetryPolicy
from stopline.controller import Controller
from stopline.core.records import Item
from stopline.runtime.operations import reconcile
from stopline.runtime.scheduler import Scheduler
from stopline.store import Store, open_store, raw
from stopline.targets.base import RemoteRef
from stopline.targets.directory import DirectoryTarget

from .notice import discovered, drain, notice_automation

REVISED = [Artifact("notice", "Outage", "API down", "Fixed at 10:02.")]


class ByContent(DirectoryTarget):
    """A create of content the target holds already answers the object holding it; updates
    are counted."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.held: dict[str, RemoteRef] = {}
        self.updates = 0

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        if artifact.content_hash not in self.held:
            self.held[artifact.content_hash] = super().create(artifact, idempotency_key)
        return self.held[artifact.content_hash]

    def update(self, ref: RemoteRef, artifact: Artifact) -> RemoteRef:
        self.updates += 1
        return super().update(ref, artifact)


def notices(target: ByContent, keys: list[str]) -> Automation:
    """``ops``, one identical notice per key in ``keys`` (read at each discovery)."""
    automation = notice_automation(
        target,
        retry=RetryPolicy(max_attempts=3, base_delay=0.0),
        revise=lambda ctx, reason, current: REVISED,
    )
    automation.discover = lambda ctx: list(keys)
    return automation


def objects(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def by_state(store: Store) -> dict[str, list[Item]]:
    found: dict[str, list[Item]] = {}
    for item in store.list_items(automation="ops"):
        found.setdefault(item.state.value, []).append(item)
    return found


def test_an_object_another_item_holds_stops_the_item_before_it_binds(
    store: Store, tmp_path: Path
) -> None:
    target = ByContent(tmp_path / "out")
    drain(discovered(store, App([notices(target, ["one", "two"])])))
    states = by_state(store)
    assert sorted(states) == ["completed", "exception"], states
    (done,), (stopped,) = states["completed"], states["exception"]
    held = done.doc("artifacts")[0]["remote_id"]
    assert held and stopped.doc("artifacts")[0]["remote_id"] is None  # nothing bound
    last = store.history(stopped.id)[-1]
    assert last.to_state.value == "exception"
    detail = str(last.detail)
    assert "remote_object_held" in detail and done.id in detail and held in detail
    assert stopped.lease_owner is None
    assert len(list((tmp_path / "out").iterdir())) == 1  # one object folder


def test_an_object_bound_before_holds_were_kept_is_held_by_the_first_to_write_it(
    store: Store, tmp_path: Path
) -> None:
    """Two items delivered to one object while the store kept no holds (a database from
    before them): the first revision to reach the target takes the object and completes; the
    other's revision fails before its update, and the object keeps the first one's text."""
    drop = {
        "sqlite": "DROP TRIGGER remote_holds_no_delete",
        "postgres": "DROP TRIGGER remote_holds_append_only ON remote_holds",
    }[store.dialect]
    with raw.writing(store) as cur:
        cur.execute(drop)
    target = ByContent(tmp_path / "out")
    keys = ["one"]
    app = App([notices(target, keys)], actors={"olga": ("operator",)})
    worker = discovered(store, app)
    drain(worker)
    forget_holds(store)
    keys.append("two")
    Scheduler(store, app).tick(force=True)
    drain(worker)
    forget_holds(store)
    one, two = (only(store, key) for key in ("one", "two"))
    assert one.state.value == two.state.value == "completed"
    assert one.doc("artifacts")[0]["remote_id"] == two.doc("artifacts")[0]["remote_id"]

    people = Controller(store)
    assert people.revise(two.id, actor="olga", reason="fixed", artifacts=["notice"]).applied
    drain(worker)
    assert only(store, "two").state.value == "revision_completed"
    assert target.updates == 1
    written = objects(tmp_path / "out")

    assert people.revise(one.id, actor="olga", reason="fixed", artifacts=["notice"]).applied
    drain(worker)
    after = only(store, "one")
    assert after.state.value == "revision_failed", after.state
    assert "remote_object_held" in str(store.history(after.id)[-1].detail)
    assert target.updates == 1 and objects(tmp_path / "out") == written


def only(store: Store, key: str) -> Item:
    (item,) = [i for i in store.list_items(automation="ops") if i.key == key]
    return item


def forget_holds(store: Store) -> None:
    with raw.writing(store) as cur:
        cur.execute("DELETE FROM remote_holds")


def test_two_items_racing_for_one_object_see_one_holder(store_url: str) -> None:
    """Two connections take the same objects at the same moment: each object has one holder,
    and both takers are told the same one."""
    stores = [open_store(store_url) for _ in range(2)]
    now = datetime.now(UTC)
    answers: list[list[Any]] = [[], []]
    start = threading.Barrier(2)

    def take(n: int) -> None:
        for i in range(25):
            start.wait()
            held = stores[n].remote_holds.take("drafts", f"obj-{i}", f"it_{n}", "notice", now)
            answers[n].append(held)

    threads = [threading.Thread(target=take, args=(n,)) for n in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
    finally:
        for s in stores:
            s.close()
    assert len(answers[0]) == len(answers[1]) == 25
    for first, second in zip(*answers, strict=True):
        assert first == second and first.item_id in ("it_0", "it_1")


def test_a_hold_is_per_target_and_never_moves(store: Store) -> None:
    now = datetime.now(UTC)
    holds = store.remote_holds
    assert holds.take("drafts", "a", "it_1", "en", now) == ("it_1", "en")
    assert holds.take("drafts", "a", "it_1", "en", now) == ("it_1", "en")  # taken again: kept
    assert holds.take("drafts", "a", "it_2", "en", now) == ("it_1", "en")
    assert holds.take("drafts", "a", "it_1", "fr", now) == ("it_1", "en")
    assert holds.take("archive", "a", "it_2", "en", now) == ("it_2", "en")  # another target
    for statement in (
        "UPDATE remote_holds SET item_id = 'it_2'",
        "DELETE FROM remote_holds",
    ):
        with pytest.raises(Exception, match="append-only"), raw.writing(store) as cur:
            cur.execute(statement)
    assert holds.take("drafts", "a", "it_2", "en", now) == ("it_1", "en")


FINDER = '''
from pathlib import Path

from stopline import App, Automation, Evidence, Proposal
from stopline.targets.base import RemoteRef
from stopline.targets.directory import DirectoryTarget

HERE = Path(__file__).parent


class FindsTheHeldObject(DirectoryTarget):
    """A lookup by any key answers the object named in held.txt (another item's)."""

    def find(self, idempotency_key: str) -> RemoteRef:
        return RemoteRef((HERE / "held.txt").read_text(), "")


app = App([Automation("ops", lambda ctx: [], lambda ctx: Evidence({}),
                      lambda ctx: Proposal("publish", {}),
                      target=FindsTheHeldObject(HERE / "out"))])
'''


def test_a_reconcile_that_finds_an_object_another_item_holds_is_refused(
    store: Store, tmp_path: Path
) -> None:
    """An operator's reconcile binds what the target's lookup finds; a lookup answering the
    object another item holds is refused ``remote_object_held`` and writes nothing."""
    target = ByContent(tmp_path / "out")
    drain(discovered(store, App([notices(target, ["one", "two"])], actors={"olga": ("operator",)})))
    states = by_state(store)
    (done,), (stopped,) = states["completed"], states["exception"]
    (tmp_path / "held.txt").write_text(done.doc("artifacts")[0]["remote_id"])
    (tmp_path / "finder.py").write_text(FINDER)
    before = store.history(stopped.id)
    decision = reconcile(
        Controller(store),
        stopped.id,
        key="notice",
        actor="olga",
        app_spec=f"{tmp_path / 'finder.py'}:app",
    )
    assert decision.outcome.value == "refused" and decision.reasons == ("remote_object_held",)
    assert store.history(stopped.id) == before
    assert only(store, stopped.key).doc("artifacts")[0]["remote_id"] is None
