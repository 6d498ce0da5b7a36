"""One discovery pass of an automation at a time, across every scheduler on the database.

A scheduler counts the room ``max_open_items`` leaves and creates items in its automation's
turn, so two schedulers (two hosts) cannot both count the same room and each fill it. What is
checked, on both stores, without timing: the count and every insert happen while the turn is
held (another store cannot take it then); a scheduler that cannot have the turn creates no new
item and holds the keys back for a later pass; a turn is given back, and a process that dies
holding it (SIGKILL) holds nobody off."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from stopline import App, Automation, Evidence, Proposal
from stopline.core.commands import Discover
from stopline.core.decide import decide
from stopline.core.step import Context
from stopline.runtime import creating
from stopline.runtime.retrying import Reconnect
from stopline.runtime.scheduler import Scheduler, new_item_id
from stopline.store import Store, open_store

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SHORT = 0.05  # seconds a probe waits for a turn someone holds (it must not get it)
LONG = 60.0  # seconds to wait for a turn that is being given back (never reached when it is)


def app_of(listed: list[str], most: int | None = 5) -> App:
    ops = Automation(
        "ops",
        lambda ctx: list(listed),
        lambda ctx: Evidence({}),
        lambda ctx: Proposal("publish", {}),
        max_open_items=most,
    )
    return App([ops])


@pytest.fixture
def other(store_url: str) -> Iterator[Store]:
    """A second store on the same database: another scheduler's host."""
    opened = open_store(store_url)
    try:
        yield opened
    finally:
        opened.close()


def turn_is_held(other: Store) -> bool:
    probe = other.discovery_turn("ops", SHORT)
    if probe is None:
        return True
    probe.end()
    return False


def checking(method: Callable[..., Any], other: Store, seen: list[bool]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        seen.append(turn_is_held(other))
        return method(*args, **kwargs)

    return call


def test_the_room_is_counted_and_filled_in_the_automation_turn(store: Store, other: Store) -> None:
    counted: list[bool] = []
    inserted: list[bool] = []
    store.open_items = checking(store.open_items, other, counted)  # type: ignore[method-assign]
    store.insert = checking(store.insert, other, inserted)  # type: ignore[method-assign]
    scheduler = Scheduler(store, app_of([f"k{i}" for i in range(8)]), clock=lambda: T0)
    scheduler.register()

    fired = scheduler.tick(force=True)[0]

    assert (fired.new, fired.held_back) == (5, 3)
    assert counted == [True]
    assert inserted == [True] * 5
    assert not turn_is_held(other)  # given back after the pass


def test_without_a_limit_no_turn_is_taken(store: Store, other: Store) -> None:
    held = other.discovery_turn("ops", LONG)
    assert held is not None
    try:
        scheduler = Scheduler(store, app_of(["k0", "k1"], most=None), clock=lambda: T0)
        scheduler.register()
        fired = scheduler.tick(force=True)[0]
    finally:
        held.end()
    assert (fired.new, fired.held_back) == (2, 0)


def test_a_scheduler_without_its_turn_creates_nothing_new(
    store: Store, other: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(creating, "TURN_WAIT", SHORT)
    scheduler = Scheduler(store, app_of(["k0", "k1", "k2"]), clock=lambda: T0)
    scheduler.register()
    assert scheduler.tick(force=True)[0].new == 3
    scheduler = Scheduler(store, app_of([f"k{i}" for i in range(6)]), clock=lambda: T0)

    held = other.discovery_turn("ops", LONG)  # another host's pass is creating items
    assert held is not None
    try:
        with caplog.at_level(logging.WARNING, logger="stopline.scheduler"):
            fired = scheduler.tick(force=True)[0]
    finally:
        held.end()

    assert (fired.new, fired.existing, fired.held_back) == (0, 3, 3)
    assert store.open_items("ops", 100) == 3
    assert "held its turn" in caplog.text
    fired = scheduler.tick(force=True)[0]  # the turn given back: the room is filled
    assert (fired.new, fired.existing, fired.held_back) == (2, 3, 1)


def test_a_turn_is_one_holder_at_a_time_and_given_back(store: Store, other: Store) -> None:
    first = store.discovery_turn("ops", LONG)
    assert first is not None
    assert other.discovery_turn("ops", SHORT) is None
    first.end()
    second = other.discovery_turn("ops", LONG)
    assert second is not None
    first.end()  # ending twice is harmless: it never ends the turn of the one who holds it now
    assert store.discovery_turn("ops", SHORT) is None
    second.end()


def lost_database(store: Store) -> BaseException:
    """What the driver raises when the database went away (a transient error)."""
    if store.dialect == "postgres":
        import psycopg

        return psycopg.OperationalError("server closed the connection unexpectedly")
    import sqlite3

    return sqlite3.OperationalError("database is locked")


def test_a_pass_that_lost_the_database_takes_its_turn_again_and_counts_anew(
    store: Store, other: Store
) -> None:
    """The connection that held the turn may be gone with the database: another host may then
    have filled the room. Nothing more is created than the room counted in a new turn."""
    app = app_of([f"k{i}" for i in range(8)])
    policy = app.automations[0].policy
    inserts = 0

    def insert(decision: Any) -> bool:
        nonlocal inserts
        inserts += 1
        if inserts == 3:  # meanwhile another host, its turn had, filled the room
            for key in ("x0", "x1", "x2"):
                command = Discover(new_item_id(), "ops", key, {})
                assert other.insert(decide(None, command, Context(T0, policy)))
            raise lost_database(store)
        return original(decision)

    original = store.insert
    store.insert = insert  # type: ignore[method-assign]
    reconnect = Reconnect(sleep=lambda seconds: None)
    scheduler = Scheduler(store, app, clock=lambda: T0, reconnect=reconnect)
    scheduler.register()

    fired = scheduler.tick(force=True)[0]

    assert store.open_items("ops", 100) == 5  # two of its own, three of the other host's
    assert (fired.new, fired.held_back) == (2, 6)
    assert not turn_is_held(other)


HOLDER = """
import sys, time
from stopline.store import open_store
store = open_store(sys.argv[1])
turn = store.discovery_turn("ops", 60)
print("held" if turn is not None else "not had", flush=True)
time.sleep(600)
"""


def test_a_holder_killed_holds_nobody_off(store_url: str, store: Store) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPLINE_")}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, store_url], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert store.discovery_turn("ops", SHORT) is None
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=LONG)
        turn = store.discovery_turn("ops", LONG)  # the server or the kernel let go of it
        assert turn is not None
        turn.end()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
