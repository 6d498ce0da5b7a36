"""The edges of group reads (``runtime/group_commit.py``) and of a lockstep round's reads
(``runtime/lockstep.py``): groups capped at their limit and led by the oldest waiter, a
failure that reaches every caller of a group, only the checks before acting read together,
each item resumed with its own reads, and the counts of what was read. No assertion depends
on how fast the machine is: a held call and the count of waiting calls order the threads, and
the lockstep driver runs its greenlets on the test's own thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, cast

from stopline import Proposal
from stopline.runtime.group_commit import GroupReader, Groups
from stopline.runtime.lockstep import Lockstep
from stopline.runtime.worker import Worker
from stopline.store import Store

from .acting import Reads, acting_app, discovered


def queued_behind_a_held_leader(
    run_many: Callable[[list[int]], list[int]], limit: int, waiters: list[int]
) -> tuple[Groups[int, int], dict[int, object], threading.Event, list[threading.Thread]]:
    """``Groups(run_many, limit)`` whose leader (value 0) is held inside ``run_many`` (until
    the event returned is set) while ``waiters`` queue behind it, in that order. Each
    caller's result, or what it raised, lands in the dict."""
    entered, held = threading.Event(), threading.Event()

    def holding(values: list[int]) -> list[int]:
        if values == [0]:
            entered.set()
            held.wait(60)
        return run_many(values)

    groups: Groups[int, int] = Groups(holding, limit)
    outcomes: dict[int, object] = {}

    def call(value: int) -> None:
        try:
            outcomes[value] = groups.call(value)
        except Exception as error:
            outcomes[value] = error

    threads = [threading.Thread(target=call, args=(0,), daemon=True)]
    threads[0].start()
    assert entered.wait(60)
    for k, value in enumerate(waiters, start=1):  # one at a time: the queue keeps their order
        thread = threading.Thread(target=call, args=(value,), daemon=True)
        thread.start()
        threads.append(thread)
        for _ in range(6000):
            if groups.waiting == k:
                break
            threading.Event().wait(0.01)
        assert groups.waiting == k
    return groups, outcomes, held, threads


def test_a_group_holds_at_most_its_limit_the_oldest_waiters_first() -> None:
    """Five calls wait behind the leader with a limit of two: they are made as groups of two,
    two and one, in the order they came, each caller getting its own result; the largest group
    stays the largest after a smaller one."""
    made: list[list[int]] = []

    def run_many(values: list[int]) -> list[int]:
        made.append(values)
        return [v * 10 for v in values]

    groups, outcomes, held, threads = queued_behind_a_held_leader(run_many, 2, [1, 2, 3, 4, 5])
    held.set()
    for t in threads:
        t.join(60)
    assert outcomes == {0: 0, 1: 10, 2: 20, 3: 30, 4: 40, 5: 50}
    assert made == [[0], [1, 2], [3, 4], [5]]
    assert groups.groups == 4 and groups.largest == 2 and groups.waiting == 0
    assert groups.call(6) == 60  # alone: no one waits
    assert groups.groups == 5 and groups.largest == 2


def test_a_failed_group_reaches_every_caller_of_that_group_only() -> None:
    """The group that waited behind the leader fails: each of its three callers gets the
    error, and the leader, whose own group went well, its result."""

    def run_many(values: list[int]) -> list[int]:
        if values != [0]:
            raise ConnectionError("server closed the connection unexpectedly")
        return [0]

    groups, outcomes, held, threads = queued_behind_a_held_leader(run_many, 8, [1, 2, 3])
    held.set()
    for t in threads:
        t.join(60)
    assert outcomes[0] == 0
    assert all(isinstance(outcomes[v], ConnectionError) for v in (1, 2, 3)), outcomes
    assert groups.groups == 2 and groups.largest == 3


def test_only_a_check_before_acting_is_read_in_a_group(store: Store) -> None:
    """A read without the history or without the registry is the store's own, made alone:
    what ``store.guard_reads`` gives for those arguments, no group made."""
    ids = discovered(store, 2, "r")
    reads = Reads(store)
    reader = GroupReader(cast(Store, reads), 4)
    for history, registry in ((False, True), (True, False), (False, False)):
        got = reader.guard_reads(ids[0], history=history, registry=registry)
        assert got == store.guard_reads(ids[0], history=history, registry=registry)
    assert reader.groups == 0 and not reads.together
    assert reader.guard_reads(ids[1], history=True, registry=True) == store.guard_reads(
        ids[1], history=True, registry=True
    )
    assert reader.groups == 1 and reads.together == [[ids[1]]]


def test_the_group_reader_holds_as_many_reads_as_the_batch(store: Store) -> None:
    """A worker reads its checks before acting in groups of at most ``batch`` (not of its
    concurrency), and through a group reader whenever ``batch`` is above one."""
    app = acting_app(lambda ctx: Proposal("tidy", {}), [])
    for concurrency, batch in ((4, 2), (2, 3), (8, 5)):
        worker = Worker(store, app, concurrency=concurrency, batch=batch)
        assert isinstance(worker.reader, GroupReader) and worker.reader.limit == batch
        worker.close()


# --- a lockstep round's checks before acting --------------------------------------------


def run_items(lockstep: Lockstep, store: Store, ids: list[str], body: Callable[[str], Any]) -> None:
    """Start ``body(item_id)`` as each item's steps and pump until none is in flight (at most
    a thousand rounds: an item never resumed fails the test instead of hanging it)."""
    for item_id in ids:
        item = store.get(item_id)
        assert item is not None
        lockstep.start(item, lambda item_id=item_id: body(item_id))
    for _ in range(1000):
        if not lockstep.in_flight:
            break
        lockstep.pump()
    assert lockstep.in_flight == 0
    lockstep.drain()


def test_each_item_of_a_lockstep_round_gets_its_own_check(store: Store) -> None:
    """Three items check before acting: each resumes with its own reads (those
    ``store.guard_reads`` gives it), read in one group per round, and the counts say how many
    groups and the largest, even when a later group is smaller."""
    ids = discovered(store, 3, "r")
    reads = Reads(store)
    lockstep = Lockstep(cast(Store, reads), 4, 1, {"auto": None})  # rounds of two items
    got: dict[str, object] = {}

    def check(item_id: str) -> None:
        got[item_id] = lockstep.guard_reads(item_id, history=True, registry=True)

    run_items(lockstep, store, ids, check)
    assert got == {i: store.guard_reads(i, history=True, registry=True) for i in ids}
    assert not reads.alone
    assert sorted(i for group in reads.together for i in group) == ids
    assert lockstep.read_groups == len(reads.together) >= 2
    sizes = [len(group) for group in reads.together]
    assert lockstep.largest_read == max(sizes) == 2 and sizes[-1] == 1  # not capped by limit 1
    assert lockstep.groups == 0  # nothing written


def test_only_a_lockstep_items_check_before_acting_is_read_in_a_group(store: Store) -> None:
    """In an item's greenlet a read without the history or without the registry is the
    store's own, alone; outside an item's greenlet even a check before acting is."""
    ids = discovered(store, 2, "r")
    reads = Reads(store)
    lockstep = Lockstep(cast(Store, reads), 4, 4, {"auto": None})
    assert lockstep.guard_reads(ids[0], history=True, registry=True) == store.guard_reads(
        ids[0], history=True, registry=True
    )
    assert reads.alone == [ids[0]] and not reads.together
    got: dict[str, object] = {}

    def partial_reads(item_id: str) -> None:
        got[item_id] = lockstep.guard_reads(item_id, history=False, registry=True)

    run_items(lockstep, store, ids, partial_reads)
    assert got == {i: store.guard_reads(i, history=False, registry=True) for i in ids}
    assert not reads.together and lockstep.read_groups == 0


def test_a_failed_lockstep_read_group_reaches_every_item_of_it(store: Store) -> None:
    """The round's read fails: each item of it resumes with the error, none is left
    waiting."""
    ids = discovered(store, 4, "r")

    class Away(Reads):
        def guard_reads_many(self, item_ids: Any) -> Any:
            self.together.append(list(item_ids))
            raise ConnectionError("server closed the connection unexpectedly")

    away = Away(store)
    lockstep = Lockstep(cast(Store, away), 4, 4, {"auto": None})
    outcomes: dict[str, object] = {}

    def check(item_id: str) -> None:
        try:
            outcomes[item_id] = lockstep.guard_reads(item_id, history=True, registry=True)
        except ConnectionError as error:
            outcomes[item_id] = error

    run_items(lockstep, store, ids, check)
    assert sorted(outcomes) == ids
    assert all(isinstance(o, ConnectionError) for o in outcomes.values()), outcomes
    assert max(len(group) for group in away.together) > 1
