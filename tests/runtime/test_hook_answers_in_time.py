"""What a hook answers is read within its time, and what the worker goes on with is a copy.

A hook's ``hook_timeout`` bounded the call, not what came after it: the check of its output,
the description of what it raised, and every later read of the output ran the hook's own code
(a mapping's ``__len__``, a key's ``__str__``, an exception's ``__str__``) on the worker's
thread, with no limit. A hook that returned a mapping whose ``__len__`` never returns held the
worker for good, while its lease was renewed. Now the check, the description and a copy of the
output made of exact built-in values run within the hook's time, and a hook whose answer cannot
be read by then is abandoned and recorded ``hook_timeout``; and the hook's own objects, which
it may go on changing, never reach a record.

Nothing here is timed: the methods that hold on wait for an event the test sets at its end.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from stopline import App, Automation, Evidence, ReportForReview
from stopline.core.failures import HOOK_TIMEOUT
from stopline.core.policy import RetryPolicy
from stopline.runtime.automation import HookContext
from stopline.runtime.hook_output import Unexpected
from stopline.runtime.hooks import HookFailed, HookRunner, call_hook
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.worker import Worker
from stopline.store import Store

T0 = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
HOLD = 60.0


class Holding(Mapping[str, Any]):
    """A mapping whose ``len`` waits until ``release`` is set."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    def __getitem__(self, key: str) -> Any:
        if key != "a":
            raise KeyError(key)
        return 1

    def __iter__(self) -> Iterator[str]:
        return iter(["a"])

    def __len__(self) -> int:
        self.release.wait(HOLD)
        return 1


class Key(str):
    """A key that is a ``str`` subclass with a ``__str__`` of its own."""

    def __str__(self) -> str:
        return "another key"


def call(hook: Any, timeout: float = 30.0) -> Any:
    automation = Automation(
        "a", lambda ctx: [], hook, lambda ctx: ReportForReview({}), hook_timeout=timeout
    )
    ctx = HookContext(T0, None, "a", logging.getLogger("test"), lambda: T0)
    return call_hook(HookRunner(), automation, "observe", hook, ctx)


def test_an_output_whose_methods_never_return_is_abandoned_at_the_hook_timeout(
    release: threading.Event,
) -> None:
    failed = call(lambda ctx: Evidence(Holding(release)), timeout=0.2)
    assert isinstance(failed, HookFailed) and failed.failure_class == HOOK_TIMEOUT


def test_an_exception_whose_str_never_returns_is_abandoned_at_the_hook_timeout(
    release: threading.Event,
) -> None:
    class Holds(RuntimeError):
        def __str__(self) -> str:
            release.wait(HOLD)
            return "late"

    def raises(ctx: HookContext) -> None:
        raise Holds()

    failed = call(raises, timeout=0.2)
    assert isinstance(failed, HookFailed) and failed.failure_class == HOOK_TIMEOUT


def test_an_async_hooks_output_is_read_within_its_time_too(release: threading.Event) -> None:
    async def holding(ctx: HookContext) -> Evidence:
        return Evidence(Holding(release))

    failed = call(holding, timeout=0.2)
    assert isinstance(failed, HookFailed) and failed.failure_class == HOOK_TIMEOUT


def test_what_the_worker_goes_on_with_is_a_copy_of_exact_values() -> None:
    """The hook's own objects are copied: a change it makes after returning is not seen, and
    a key that is a ``str`` subclass is the plain string it holds."""
    data: dict[str, Any] = {Key("k"): [1, 2]}
    output = call(lambda ctx: Evidence(data))
    data[Key("k")].append("changed later")
    data["added"] = float("nan")
    assert output == Evidence({"k": [1, 2]})
    assert [type(k) for k in output.data] == [str] and type(output.data["k"]) is list


def test_a_worker_is_not_held_by_an_output_it_cannot_read(
    store: Store, release: threading.Event
) -> None:
    """One step at a time: the first attempt answers a mapping whose ``len`` holds on. It is
    recorded ``hook_timeout`` and retried, and the second attempt's evidence is recorded.
    (Before, the worker waited on that ``len`` for as long as it held on, its lease renewed.)"""

    def observe(ctx: HookContext) -> Evidence:
        assert ctx.item is not None
        if ctx.item.attempts == 1:
            return Evidence(Holding(release))
        return Evidence({"a": 1})

    app = App(
        [
            Automation(
                "auto",
                lambda ctx: ["k"],
                observe,
                lambda ctx: ReportForReview({"ok": True}),
                hook_timeout=0.5,
                retry=RetryPolicy(max_attempts=3, base_delay=0.05, max_delay=0.05),
            )
        ]
    )
    Scheduler(store, app).tick(force=True)
    worker = Worker(store, app)
    finished = threading.Event()

    def drain() -> None:
        end = time.monotonic() + 120
        while time.monotonic() < end and not release.is_set():
            if not any(i.state.is_work for i in store.list_items(automation="auto")):
                break
            if not worker.tick():
                time.sleep(0.01)
        finished.set()

    threading.Thread(target=drain, daemon=True).start()
    assert finished.wait(150)
    [item] = store.list_items(automation="auto")
    assert item.state.value == "ready_for_review"
    assert [e["class"] for e in item.attempt_log][:1] == [HOOK_TIMEOUT], item.attempt_log
    release.set()


def test_a_hook_cannot_answer_with_the_runtimes_own_failure_record() -> None:
    """``HookFailed`` is what the runtime records of a hook that raised or ran past its time,
    not an outcome: a hook that returns one (claiming ``hook_timeout``, say) has returned
    something it may not, and the outcome table stops the item for a person."""
    forged = call(lambda ctx: HookFailed(HOOK_TIMEOUT, "it was the network", retryable=True))
    assert forged == Unexpected("HookFailed")
