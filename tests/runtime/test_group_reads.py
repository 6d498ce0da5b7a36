"""Group reads (``runtime/group_commit.py``): a worker running several items on step threads
with ``batch`` above one reads their checks before acting in groups, as it writes their
decisions (``Store.guard_reads_many``: one snapshot, on PostgreSQL one statement). Each
item gets what it would have read alone, a failure reaches every caller of its group, and
an edit behind the store is found as before. No assertion depends on how fast the machine
is: the threads meet at barriers, and counts are of what was read, never of time."""

from __future__ import annotations

import threading
from typing import cast

from stopline import Proposal
from stopline.core.states import State
from stopline.core.verify import verify_item
from stopline.runtime.automation import HookContext
from stopline.runtime.group_commit import GroupReader, Groups
from stopline.runtime.worker import Worker
from stopline.store import Store
from stopline.store.protocol import GuardReads

from .acting import Reads, acting_app, discovered, drain, edit_first_event


def test_each_thread_gets_what_it_would_have_read_alone(store: Store) -> None:
    ids = [*discovered(store, 11, "r"), "missing"]
    reader = GroupReader(store, 5)
    got: dict[str, GuardReads] = {}
    start = threading.Barrier(len(ids))

    def read(item_id: str) -> None:
        start.wait(60)
        got[item_id] = reader.guard_reads(item_id, history=True, registry=True)

    threads = [threading.Thread(target=read, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(got) == sorted(ids)
    for item_id in ids[:-1]:
        assert got[item_id] == store.guard_reads(item_id, history=True, registry=True)
    assert got["missing"] == GuardReads(None, None, None)
    assert reader.largest <= 5 and reader.groups >= 3
    groups = reader.groups
    alone = reader.guard_reads(ids[0], history=False, registry=False)  # not a check before acting
    assert alone == store.guard_reads(ids[0], history=False, registry=False)
    assert reader.groups == groups


def test_what_waits_while_a_group_runs_is_the_next_group() -> None:
    """The leader's call holds until three more callers wait: they make the next group,
    together, and each gets its own result."""
    entered, held = threading.Event(), threading.Event()

    def run_many(values: list[int]) -> list[int]:
        if values == [0]:
            entered.set()
            held.wait(60)
        return [v * 10 for v in values]

    groups: Groups[int, int] = Groups(run_many, 8)
    results: dict[int, int] = {}

    def call(value: int) -> None:
        results[value] = groups.call(value)

    first = threading.Thread(target=call, args=(0,))
    first.start()
    assert entered.wait(60)
    others = [threading.Thread(target=call, args=(v,)) for v in (1, 2, 3)]
    for t in others:
        t.start()
    for _ in range(6000):  # the three queue behind the held leader
        if groups.waiting == 3:
            break
        threading.Event().wait(0.01)
    assert groups.waiting == 3
    held.set()
    for t in [first, *others]:
        t.join(60)
    assert results == {0: 0, 1: 10, 2: 20, 3: 30}
    assert groups.groups == 2 and groups.largest == 3


class Away:
    """A store whose group reads never get an answer (the database went away)."""

    def guard_reads_many(self, item_ids: list[str]) -> dict[str, GuardReads]:
        raise ConnectionError("server closed the connection unexpectedly")


def test_a_failed_group_read_reaches_every_caller_of_the_group() -> None:
    reader = GroupReader(cast(Store, Away()), 3)
    outcomes: dict[str, object] = {}
    start = threading.Barrier(6)

    def read(item_id: str) -> None:
        start.wait(60)
        try:
            outcomes[item_id] = reader.guard_reads(item_id, history=True, registry=True)
        except ConnectionError as error:
            outcomes[item_id] = error

    threads = [threading.Thread(target=read, args=(f"i{k}",), daemon=True) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(outcomes) == 6
    assert all(isinstance(o, ConnectionError) for o in outcomes.values()), outcomes
    assert reader.groups >= 2 and reader.largest <= 3


def test_a_worker_with_a_batch_reads_every_check_before_acting_in_groups(store: Store) -> None:
    ids = discovered(store, 8, "r")
    executed: list[str] = []
    reads = Reads(store)
    app = acting_app(lambda ctx: Proposal("tidy", {}), executed)
    worker = Worker(cast(Store, reads), app, concurrency=4, batch=4)
    drain(worker)
    assert states(store, ids) == [State.COMPLETED] * 8 and sorted(executed) == ids
    assert isinstance(worker.reader, GroupReader) and worker.reader.groups == len(reads.together)
    assert not reads.alone
    assert sorted(i for group in reads.together for i in group) == sorted(ids * 2)
    for item_id in ids:
        item = store.get(item_id)
        assert item is not None and verify_item(item, store.history(item_id)) == []


def test_one_at_a_time_or_in_groups_of_one_each_check_is_read_alone(store: Store) -> None:
    ids = discovered(store, 4, "r")
    reads = Reads(store)
    app = acting_app(lambda ctx: Proposal("tidy", {}), [])
    # groups of one would only make the threads wait for each other
    assert Worker(cast(Store, reads), app, concurrency=4).reader is reads
    worker = Worker(cast(Store, reads), app)
    drain(worker)
    assert worker.reader is reads and not reads.together
    assert sorted(reads.alone) == sorted(ids * 2)


def test_a_history_edited_before_its_check_is_never_acted_on(store: Store, store_url: str) -> None:
    ids = discovered(store, 4, "r")
    executed: list[str] = []

    def propose(ctx: HookContext) -> Proposal:
        if ctx.item.id == ids[2]:
            edit_first_event(store_url, ctx.item.id)
        return Proposal("tidy", {})

    drain(Worker(store, acting_app(propose, executed), concurrency=4, batch=4))
    assert sorted(executed) == sorted(set(ids) - {ids[2]})
    assert states(store, ids) == [
        State.COMPLETED,
        State.COMPLETED,
        State.EXCEPTION,
        State.COMPLETED,
    ]


def states(store: Store, ids: list[str]) -> list[State]:
    found = [store.get(i) for i in ids]
    return [i.state for i in found if i is not None]
