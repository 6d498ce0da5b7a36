"""Calling hooks (runtime/hooks.py, hook_output.py, outcome_table.py) in process: whatever a
hook raises, returns or takes too long over becomes a value the worker can record."""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from stopline.core.artifacts import Artifact, Asset
from stopline.core.commands import Failure, NeedsEyes, Observe, Propose, QAResult, Report
from stopline.runtime.automation import Automation, HookContext
from stopline.runtime.hook_output import Unexpected
from stopline.runtime.hooks import HookFailed, HookRunner, HookTimeout, call_hook, describe
from stopline.runtime.outcome_table import Signature, command_for
from stopline.runtime.outcomes import (
    Deliver,
    Evidence,
    Fail,
    Proposal,
    ReportForReview,
    RetryLater,
    TerminalError,
    TransientError,
)
from stopline.runtime.outcomes import NeedsEyes as NeedsEyesOutcome

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
SIGNATURE = Signature("w1", 7, T0, lambda: 0.25)


def automation(**changes: Any) -> Automation:
    return Automation(
        name="a",
        discover=lambda ctx: [],
        observe=lambda ctx: None,
        propose=lambda ctx: None,
        **changes,
    )


def context() -> HookContext:
    return HookContext(T0, None, "a", logging.getLogger("test"), lambda: T0)


def call(hook: Any, name: str = "observe", **changes: Any) -> Any:
    return call_hook(HookRunner(), automation(**changes), name, hook, context())


def test_a_hook_past_its_time_is_abandoned_and_the_next_hook_gets_a_new_thread() -> None:
    """The runner stops waiting after the timeout (HookTimeout); the next call runs on a fresh
    thread and gets its own answer, never the abandoned hook's."""
    release = threading.Event()
    threads: list[str] = []

    def stuck() -> str:
        threads.append(threading.current_thread().name + str(threading.get_ident()))
        release.wait(60)
        return "late"

    def quick() -> str:
        threads.append(threading.current_thread().name + str(threading.get_ident()))
        return "now"

    runner = HookRunner()
    with pytest.raises(HookTimeout):
        runner.run(stuck, (), 0.05)
    assert runner.run(quick, (), 10) == ("now", None)
    release.set()
    assert runner.abandoned == 1 and len(set(threads)) == 2


def test_a_timed_out_hook_is_recorded_as_hook_timeout() -> None:
    """call_hook turns a timeout into HookFailed(hook_timeout), left to the core's rule."""
    release = threading.Event()
    try:
        failed = call(lambda ctx: release.wait(60), hook_timeout=0.05)
    finally:
        release.set()
    assert failed == HookFailed(
        "hook_timeout", "the observe hook ran past its hook_timeout of 0.05 s and was abandoned"
    )


def raising(error: BaseException) -> Any:
    def hook(ctx: Any) -> Any:
        raise error

    return hook


def _recurse(ctx: Any) -> Any:
    return _recurse(ctx)


class Hostile(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")


@pytest.mark.parametrize(
    ("hook", "expected"),
    [
        (_recurse, HookFailed("RecursionError", "maximum recursion depth exceeded")),
        (lambda ctx: bytearray(1 << 60), HookFailed("MemoryError", "MemoryError")),
        (lambda ctx: exit(3), HookFailed("SystemExit", "3")),
        (
            raising(KeyboardInterrupt),
            HookFailed("KeyboardInterrupt", "KeyboardInterrupt"),
        ),
        (raising(Hostile()), HookFailed("Hostile", "Hostile")),
        (
            raising(TransientError("later")),
            HookFailed("TransientError", "later", True),
        ),
        (
            raising(TerminalError("never")),
            HookFailed("TerminalError", "never", False),
        ),
    ],
)
def test_whatever_a_hook_raises_is_a_failure_with_its_real_class(
    hook: Any, expected: HookFailed
) -> None:
    """RecursionError, MemoryError, even SystemExit and KeyboardInterrupt, and an exception
    whose message cannot be read: a HookFailed, retryable as retry_on/terminal_on say."""
    assert call(hook) == expected


def test_a_message_that_is_not_valid_unicode_is_made_valid() -> None:
    """A lone surrogate in a hook's error message does not reach a record."""
    failed = call(raising(ValueError("bad \ud800 text" + "x" * 900)))
    assert failed.failure_class == "ValueError"
    assert failed.message.startswith("bad ? text") and len(failed.message) == 500
    failed.message.encode("utf-8")
    assert describe(Hostile()) == "Hostile"


def test_an_exception_class_named_beyond_reason_is_recorded_within_bounds() -> None:
    """A hostile hook may raise an exception class it made with any name: the failure class
    recorded is at most its first 100 characters."""
    named = type("Long" + "X" * 10_000, (RuntimeError,), {})
    failed = call(raising(named("from a made class")))
    assert failed.failure_class == "Long" + "X" * 96 and failed.message == "from a made class"


@dataclass(frozen=True)
class Sly(Evidence):
    """A subclass of an outcome type is held to that type's shape."""


FINE = Artifact("k", "t", "s", "b")


def with_assets(asset: Any) -> Artifact:
    return Artifact("k", "t", "s", "b", assets=(asset,))


def deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("name", "output", "problem"),
    [
        ("observe", Evidence({"a": deep(600)}), "$.observe.data.a" + "[0]" * 62 + ": depth"),
        ("observe", Evidence({"a": math.nan}), "$.observe.data.a: not_finite"),
        ("observe", Evidence({"a": 2**60}), "$.observe.data.a: integer_range"),
        ("observe", Evidence({"\ud800": 1}), "unicode"),
        ("observe", Evidence([1, 2]), "$.observe.data: is list, not Mapping"),  # type: ignore[arg-type]
        ("observe", Evidence({}, observed_at="yesterday"), "$.observe.observed_at: is str"),  # type: ignore[arg-type]
        ("propose", Proposal(None, {}), "$.propose.action: is NoneType, not str"),  # type: ignore[arg-type]
        ("execute", Deliver("abc"), "$.execute.artifacts: is str, not Sequence"),  # type: ignore[arg-type]
        ("execute", Deliver([{"key": "x"}]), "$.execute.artifacts[0]: is dict, not Artifact"),  # type: ignore[list-item]
        ("execute", Deliver([Artifact("k", "t", "s", None)]), "artifacts[0].body: is NoneType"),  # type: ignore[arg-type]
        ("revise", [Artifact("k", "t", "s", "b" * 2_000_000)], "$.revise[0].body: string_length"),
        ("observe", RetryLater("x" * 300_000), "$.observe.message: string_length"),
        # each field's type on its own, text included where a str is not asked for
        ("observe", Evidence({}, observed_at=1_700_000_000), "observed_at: is int"),  # type: ignore[arg-type]
        ("observe", Sly([1, 2]), "$.observe.data: is list, not Mapping"),  # type: ignore[arg-type]
        ("propose", Proposal("act", [1]), "$.propose.params: is list, not Mapping"),  # type: ignore[arg-type]
        ("propose", Proposal("act", {}, severity="apocalyptic"), "$.propose.severity: is 'apoca"),
        ("propose", ReportForReview([1]), "$.propose.report: is list, not Mapping"),  # type: ignore[arg-type]
        ("propose", NeedsEyesOutcome("look", owner=5), "$.propose.owner: is int, not str"),  # type: ignore[arg-type]
        ("execute", Deliver([], result=[1]), "$.execute.result: is list, not Mapping"),  # type: ignore[arg-type]
        ("execute", Deliver([with_assets({"name": "a"})]), "assets[0]: is dict, not Asset"),
        (
            "execute",
            Deliver([with_assets(Asset("a", "image/png", "x"))]),
            "data: is str, not bytes",
        ),  # type: ignore[arg-type]
        ("qa", QAResult(1), "$.qa.passed: is int, not bool"),  # type: ignore[arg-type]
        # every member of what a revise hook returns, not the first only
        ("revise", [Artifact("k", "t", "s", None)], "$.revise[0].body: is NoneType"),  # type: ignore[arg-type]
        ("revise", [FINE, Artifact("k", "t", "s", None)], "$.revise[1].body: is NoneType"),  # type: ignore[arg-type]
    ],
)
def test_an_output_out_of_shape_or_limits_is_invalid_output(
    name: str, output: Any, problem: str
) -> None:
    """The field and the limit are named; the hook's output is not returned."""
    failed = call(lambda ctx, *args: output, name)
    assert isinstance(failed, HookFailed) and failed.failure_class == "invalid_output"
    assert failed.retryable is None
    assert problem in failed.message, failed.message


def test_an_outcome_class_instead_of_an_outcome_is_passed_on_by_its_type_name() -> None:
    """A hook that answers ``Evidence`` itself (the class): nothing of it is read as fields
    (a class has no field values to read); the outcome table names it by its type."""
    assert call(lambda ctx: Evidence) == Unexpected("type")


def test_an_output_in_shape_and_limits_is_returned_as_an_equal_copy() -> None:
    """Fine output passes on as an equal copy of exact built-in values, taken within the
    hook's time: not the object the hook holds (and may go on changing)."""
    output = Evidence({"a": [1, 2.5, "x", None, True]}, observed_at=T0, classification="k")
    copied = call(lambda ctx: output)
    assert copied == output and copied is not output
    assert type(copied.data) is dict and copied.data["a"] is not output.data["a"]


@pytest.mark.parametrize(
    ("hook", "outcome", "command"),
    [
        ("observe", Evidence({"a": 1}), Observe("w1", 7, {"a": 1}, T0)),
        (
            "propose",
            Proposal("act", {"p": 1}, "t", "why"),
            Propose("w1", 7, "act", "t", {"p": 1}, "why"),
        ),
        ("propose", ReportForReview({"r": 1}), Report("w1", 7, {"r": 1})),
        ("execute", RetryLater("busy", "Busy"), Failure("w1", 7, "Busy", "busy", True, 0.25)),
        ("observe", Fail("no"), Failure("w1", 7, "terminal", "no", False, 0.25)),
        (
            "observe",
            HookFailed("hook_timeout", "slow"),
            Failure("w1", 7, "hook_timeout", "slow", None, 0.25),
        ),
        (
            "observe",
            Proposal("act", {}),
            NeedsEyes(
                "w1", 7, "operators", "observe hook returned Proposal, which it may not return"
            ),
        ),
        (
            "propose",
            {"a": 1},
            NeedsEyes("w1", 7, "operators", "propose hook returned dict, which it may not return"),
        ),
    ],
)
def test_the_outcome_table(hook: str, outcome: Any, command: Any) -> None:
    """Each outcome a hook may return becomes its one command; anything else stops for eyes."""
    assert command_for(hook, outcome, SIGNATURE) == command


@pytest.mark.parametrize("seconds", [0, -1, math.inf, math.nan, "5", True])
def test_lease_and_hook_timeout_must_be_positive_finite_seconds(seconds: Any) -> None:
    """An automation refuses a lease or hook timeout that is not a positive, finite number."""
    with pytest.raises(ValueError, match="hook_timeout"):
        automation(hook_timeout=seconds)
    with pytest.raises(ValueError, match="lease_seconds"):
        automation(lease_seconds=seconds)
