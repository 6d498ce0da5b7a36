"""Failures a hook makes up to move its item or to take its worker down, in process: an
exception whose class cannot be asked about, an exception both retryable and terminal, an
output that changes between its check and its copy, a failure class made to fill the record.
Whatever it tries, the call answers a value, the core decides, and the worker goes on."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stopline.core.artifacts import Artifact
from stopline.core.failures import INVALID_OUTPUT
from stopline.core.policy import RetryPolicy
from stopline.core.states import State
from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.hooks import HookFailed, HookRunner, call_hook
from stopline.runtime.outcomes import Evidence, ReportForReview, RetryLater
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.worker import Worker
from stopline.store import open_store
from stopline.targets.directory import DirectoryTarget

from .notice import drained, notice_automation

T0 = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)


HOSTILE = threading.Event()  # set while the code under test runs (pytest asks them later)


@contextmanager
def hostile() -> Iterator[None]:
    HOSTILE.set()
    try:
        yield
    finally:
        HOSTILE.clear()


class ClassRaises(Exception):
    """An exception whose ``__class__`` (what ``isinstance`` reads once the type does not
    match) raises another of its kind."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # type: ignore[override]
        if HOSTILE.is_set():
            raise ClassRaises("asked my class")
        return ClassRaises


class Named(type):
    """A metaclass whose classes answer ``__name__`` by raising."""

    @property
    def __name__(cls) -> Any:  # type: ignore[override]
        if HOSTILE.is_set():
            raise ClassRaises("asked my name")
        return "Nameless"


class Nameless(Exception, metaclass=Named):
    pass


class Both(ConnectionError, PermissionError):
    """Retryable as a ConnectionError, terminal as a PermissionError."""


def raising(error: BaseException) -> Any:
    def hook(ctx: Any) -> Any:
        raise error

    return hook


def call(hook: Any, **changes: Any) -> Any:
    automation = Automation("a", lambda ctx: [], hook, lambda ctx: ReportForReview({}), **changes)
    ctx = HookContext(T0, None, "a", logging.getLogger("test"), lambda: T0)
    with hostile():
        return call_hook(HookRunner(), automation, "observe", hook, ctx)


@pytest.mark.parametrize("error", [ClassRaises("boom"), Nameless("boom")])
def test_an_exception_that_raises_when_asked_its_class_is_still_a_failure(
    error: BaseException,
) -> None:
    """Before, ``classify`` raised on the worker's thread: out of ``call_hook``, out of the
    step, out of ``Worker.tick``, and the worker process ended. Now it is an unclassified
    failure (stopped for a person), named by its real class."""
    failed = call(raising(error))
    assert isinstance(failed, HookFailed)
    assert failed.failure_class == type.__dict__["__name__"].__get__(type(error))
    assert failed.retryable is None


def test_an_exception_both_retryable_and_terminal_is_terminal() -> None:
    """``terminal_on`` names what no retry can fix: an exception that is also of a
    ``retry_on`` class is not retried (fail closed), whichever order the classes come in."""
    failed = call(
        raising(Both("refused")),
        retry_on=(ConnectionError,),
        terminal_on=(PermissionError,),
    )
    assert isinstance(failed, HookFailed) and failed.retryable is False


class Shifting(Mapping[str, Any]):
    """Small the first time it is read (the check), a string past the limits after (the
    copy)."""

    def __init__(self) -> None:
        self.reads = 0

    def _now(self) -> dict[str, Any]:
        self.reads += 1
        return {"a": 1} if self.reads == 1 else {"a": "x" * (2 << 20)}

    def __getitem__(self, key: str) -> Any:
        return self._now()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(["a"])

    def __len__(self) -> int:
        return 1

    def items(self) -> Any:
        return self._now().items()


def test_an_output_that_changes_after_its_check_is_not_recorded() -> None:
    """What the worker goes on with is the copy; the copy is what must be within the limits."""
    failed = call(lambda ctx: Evidence(Shifting()))
    assert isinstance(failed, HookFailed), "a 2 MiB string passed the input limits"
    assert failed.failure_class == INVALID_OUTPUT


def test_a_failure_class_a_hook_names_is_kept_within_bounds(tmp_path: Path) -> None:
    """A RetryLater naming a 200,000-character class: each attempt's entry, the event and the
    exhausted item's account keep at most its first 100 characters, as of a class raised."""
    long_class = "c" * 200_000

    def observe(ctx: HookContext) -> Any:
        return RetryLater("later", failure_class=long_class)

    app = App(
        [
            Automation(
                "auto",
                lambda ctx: ["k"],
                observe,
                lambda ctx: ReportForReview({}),
                retry=RetryPolicy(max_attempts=3, base_delay=0, max_delay=0),
            )
        ]
    )
    store = open_store(f"sqlite:///{tmp_path / 'long.db'}")
    try:
        Scheduler(store, app, clock=lambda: T0).tick(force=True)
        worker = Worker(store, app, clock=lambda: T0, renew=False)
        while worker.tick():
            pass
        (item,) = store.list_items()
        assert item.state is State.EXHAUSTED
        assert [e["class"] for e in item.attempt_log] == ["c" * 100] * 3
        assert item.doc("account")["last_error"]["class"] == "c" * 100
    finally:
        store.close()


@pytest.mark.parametrize("error", [ClassRaises("boom"), Nameless("boom")])
def test_a_worker_goes_on_after_a_hook_raised_such_an_exception(
    tmp_path: Path, error: BaseException
) -> None:
    """In a worker: the hostile item stops for a person and the next item completes."""

    def observe(ctx: HookContext) -> Any:
        assert ctx.item is not None
        if ctx.item.key == "hostile":
            raise error
        return Evidence({"ok": True})

    app = App(
        [
            Automation(
                "auto",
                lambda ctx: ["hostile", "fine"],
                observe,
                lambda ctx: ReportForReview({"ok": True}),
            )
        ]
    )
    store = open_store(f"sqlite:///{tmp_path / 'hostile.db'}")
    try:
        Scheduler(store, app, clock=lambda: T0).tick(force=True)
        worker = Worker(store, app, clock=lambda: T0, renew=False)
        with hostile():
            while worker.tick():
                pass
        states = {item.key: item.state for item in store.list_items()}
        assert states == {"hostile": State.EXCEPTION, "fine": State.READY_FOR_REVIEW}
    finally:
        store.close()


class CreateRaises(DirectoryTarget):
    """A target whose create raises an exception that raises when asked its class."""

    def create(self, artifact: Artifact, idempotency_key: str) -> Any:
        raise ClassRaises("create")


def test_a_target_raising_such_an_exception_is_its_failure_not_the_workers(
    tmp_path: Path,
) -> None:
    """The same exception from a target's call: before, the driver asked its class on the
    worker's thread and the worker's loop ended with the item still claimed."""
    store = open_store(f"sqlite:///{tmp_path / 'target.db'}")
    try:
        automation = notice_automation(CreateRaises(tmp_path / "out"))
        with hostile():
            item = drained(store, automation)
        assert item.state is State.EXCEPTION and item.lease_owner is None
        assert item.attempt_log[-1]["class"] == "ClassRaises"
    finally:
        store.close()


def test_a_discovery_raising_such_an_exception_is_its_failure_not_the_schedulers(
    tmp_path: Path,
) -> None:
    """Before, the scheduler asked the class for its name on its own thread, and
    ``Scheduler.tick`` (the loop of ``stopline run``) raised."""

    def discover(ctx: HookContext) -> Any:
        raise Nameless("discover")

    app = App([Automation("auto", discover, lambda ctx: None, lambda ctx: None)])
    store = open_store(f"sqlite:///{tmp_path / 'discover.db'}")
    try:
        with hostile():
            (fired,) = Scheduler(store, app, clock=lambda: T0).tick(force=True)
        assert fired.failure == "Nameless" and fired.new == 0
    finally:
        store.close()
