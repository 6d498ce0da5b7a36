"""What a hostile discovery hook lists, against a real scheduler and database: keys and inputs
whose own methods lie, and listings that never end. Whatever it lists, nothing past the limits
is written, the scheduler's loop goes on, and a listing abandoned at its time stops being read."""

from __future__ import annotations

import asyncio
import threading
import time
import unicodedata
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from stopline import App, Automation, Evidence, Proposal
from stopline.runtime.automation import Discovered, HookContext
from stopline.runtime.scheduler import MAX_DISCOVERED, MAX_KEY, Scheduler
from stopline.runtime.watch import watched
from stopline.store import Store

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
WAIT = 60.0  # seconds a test waits for what must happen (never reached when it does)


def scheduler(
    store: Store, discover: Any, hook_timeout: float = 20.0, watch: bool = False
) -> Scheduler:
    """A scheduler of one automation; with ``watch``, its hooks wrapped as ``stopline run``
    wraps them (``watch.watched``)."""
    app = App(
        [
            Automation(
                "ops",
                discover,
                lambda ctx: Evidence({}),
                lambda ctx: Proposal("publish", {}),
                hook_timeout=hook_timeout,
            )
        ]
    )
    made = Scheduler(store, watched(app)[0] if watch else app, clock=lambda: T0)
    made.register()
    return made


def keys(store: Store) -> list[str]:
    return sorted(item.key for item in store.list_items(automation="ops"))


class Liar(str):
    """A key whose length and membership test answer what the checks want to hear."""

    __slots__ = ()

    def __len__(self) -> int:
        return 1

    def __contains__(self, part: object) -> bool:
        return False


def test_a_key_whose_own_methods_lie_is_checked_as_the_text_it_is(store: Store) -> None:
    """Before: the key of 5,000 characters was written, the NUL key too on SQLite, and on
    PostgreSQL the NUL key raised out of ``Scheduler.tick`` (the loop of ``stopline run``),
    every pass, before the keys listed after it."""
    listed = [Discovered(Liar("k" * (MAX_KEY + 1))), Discovered(Liar("a\x00b")), "good"]
    fired = scheduler(store, lambda ctx: listed).tick(force=True)[0]
    assert (fired.new, fired.rejected, fired.failure) == (1, 2, None)
    assert keys(store) == ["good"]
    assert store.last_discovery("ops") == T0


class Turncoat(dict[str, Any]):
    """An input that answers a small mapping to the check and 2 MiB to the copy."""

    def __init__(self) -> None:
        super().__init__(a=1)
        self.asked = 0

    def items(self) -> Any:
        self.asked += 1
        return {"a": 1 if self.asked == 1 else "x" * (2 << 20)}.items()

    def keys(self) -> Any:
        return dict(self.items()).keys()


def test_an_input_that_reads_differently_the_second_time_is_not_recorded(store: Store) -> None:
    """Before: the item was written with an input of 2 MiB, past the input limits."""
    fired = scheduler(store, lambda ctx: [Discovered("turn", Turncoat()), "good"]).tick(force=True)[
        0
    ]
    assert (fired.new, fired.rejected) == (1, 1)
    assert keys(store) == ["good"]


@pytest.mark.parametrize("watch", [False, True], ids=["bare", "as-run-wraps-it"])
def test_a_discovery_listing_more_keys_than_allowed_writes_nothing(
    store: Store, watch: bool
) -> None:
    """A listing of more than ``MAX_DISCOVERED`` entries fails as a whole, its generator is
    closed after the one entry past the limit, and nothing is written. Before: every entry
    was read and each key inserted, one transaction each, however many there were."""
    read: list[int] = []
    closed = threading.Event()

    def discover(ctx: HookContext) -> Iterator[str]:
        try:
            for n in range(MAX_DISCOVERED + 5):
                read.append(n)
                yield f"k{n}"
        finally:
            closed.set()

    fired = scheduler(store, discover, watch=watch).tick(force=True)[0]
    assert fired.failure == "TooManyKeys" and fired.new == 0
    assert closed.wait(WAIT) and len(read) == MAX_DISCOVERED + 1
    assert keys(store) == [] and store.last_discovery("ops") is None


def endless_plain(started: threading.Event, closed: threading.Event) -> Any:
    def discover(ctx: HookContext) -> Iterator[str]:
        try:
            started.set()
            while True:
                time.sleep(0.01)  # the cap is never what ends it: its time is
                yield "same"
        finally:
            closed.set()

    return discover


def endless_blocking_async(started: threading.Event, closed: threading.Event) -> Any:
    """An async generator that never awaits: it holds the event loop's thread."""

    async def discover(ctx: HookContext) -> AsyncIterator[str]:
        try:
            started.set()
            while True:
                time.sleep(0.01)
                yield "same"
        finally:
            closed.set()

    return discover


def endless_async(started: threading.Event, closed: threading.Event) -> Any:
    async def discover(ctx: HookContext) -> AsyncIterator[str]:
        try:
            started.set()
            while True:
                await asyncio.sleep(0.01)
                yield "same"
        finally:
            closed.set()

    return discover


@pytest.mark.parametrize("watch", [False, True], ids=["bare", "as-run-wraps-it"])
@pytest.mark.parametrize("make", [endless_plain, endless_async, endless_blocking_async])
def test_a_listing_that_never_ends_stops_being_read_once_abandoned(
    store: Store, watch: bool, make: Any
) -> None:
    """A generator that yields forever, plain or ``async``: past its time the discovery is
    abandoned and, before, its thread went on reading it (and keeping every entry) for as long
    as the process lived, one more such thread every pass. Now the next entry it yields ends
    it: its ``finally`` runs and it holds nothing."""
    started, closed = threading.Event(), threading.Event()
    s = scheduler(store, make(started, closed), hook_timeout=0.5, watch=watch)
    fired = s.tick(force=True)[0]
    assert fired.failure == "hook_timeout" and keys(store) == []
    # a listing a loaded machine never began within its time has nothing to stop; one that
    # began is ended by its next entry (the flag is set before tick returns)
    if started.is_set():
        assert closed.wait(WAIT)


def test_a_key_in_another_unicode_form_is_not_a_second_item(store: Store) -> None:
    """``café`` composed (NFC) and decomposed (NFD, ``e`` + U+0301) are one text to Unicode
    and to the person reading the inbox. Before: a discovery that listed one form, then the
    other, made two items of one key (two proposals, each to approve, each acted on)."""
    listed = [unicodedata.normalize("NFC", "café")]
    s = scheduler(store, lambda ctx: listed)
    assert s.tick(force=True)[0].new == 1
    listed[:] = [unicodedata.normalize("NFD", "café")]
    fired = s.tick(force=True)[0]
    assert (fired.new, fired.rejected) == (0, 1)
    assert keys(store) == [unicodedata.normalize("NFC", "café")]


RELEASE = threading.Event()  # lets a held __str__ return once its test is done


class Holds(BaseException):
    """An exception (not an ``Exception``: no wrapper that catches those sees it) whose
    ``__str__`` does not return."""

    def __str__(self) -> str:
        RELEASE.wait()
        return "released"


@pytest.mark.parametrize("watch", [False, True], ids=["bare", "as-run-wraps-it"])
def test_a_discovery_failure_whose_text_never_comes_does_not_hold_the_scheduler(
    store: Store, watch: bool
) -> None:
    """Before: the scheduler asked the exception for its text (and logged its traceback) on
    its own thread, after the hook's time: ``tick`` never returned, and no automation was
    discovered again. Now the text is asked for within the hook's time, and a discovery
    whose failure cannot be told in time is abandoned like one that does not return."""

    def discover(ctx: HookContext) -> list[str]:
        raise Holds

    s = scheduler(store, discover, hook_timeout=0.5, watch=watch)
    answers: list[Any] = []
    ticking = threading.Thread(target=lambda: answers.append(s.tick(force=True)), daemon=True)
    try:
        ticking.start()
        ticking.join(WAIT)
        assert answers and answers[0][0].failure == "hook_timeout"
    finally:
        RELEASE.set()
        ticking.join(WAIT)
        RELEASE.clear()
