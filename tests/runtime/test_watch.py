"""``watched``: an app's hooks wrapped so that each failure of its own code is counted
(runtime/watch.py), and nothing else about the app changed."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from helpers import in_thread
from stopline.core.policy import ApprovalPolicy, ApprovalRule, Policy
from stopline.runtime.automation import AgentAutomation, App, Automation, HookContext
from stopline.runtime.outcomes import (
    Deliver,
    Evidence,
    ReportForReview,
    TerminalError,
    TransientError,
)
from stopline.runtime.runner import run
from stopline.runtime.watch import HookFailures, watched
from stopline.store import open_store


def _automation(name: str = "plain") -> Automation:
    def observe(ctx: HookContext) -> Evidence:
        return Evidence({})

    def propose(ctx: HookContext) -> ReportForReview:
        return ReportForReview({"summary": "fine"})

    return Automation(name, lambda ctx: [], observe, propose)


AGENTS = [
    AgentAutomation(
        "helper",
        approval=ApprovalPolicy(rules={"restart": ApprovalRule(roles=("approver",))}),
    )
]


def test_a_watched_app_keeps_its_actors_and_agent_automations() -> None:
    """The copy ``stopline run`` serves is the same app but for the wrapped hooks: the
    agents' policies are among those it registers."""
    app = App([_automation()], actors={"alice": ("approver",)}, agents=AGENTS)
    copy, failures = watched(app)
    assert copy.agents == AGENTS and dict(copy.actors) == {"alice": ("approver",)}
    assert copy.policies() == app.policies() and not failures


def test_stopline_run_registers_the_apps_agent_automations(store_url: str) -> None:
    """An app that declares agent automations beside its own: ``run`` registers both, so an
    agent's proposal finds its policy (before, only ``stopline mcp`` did)."""
    app = App([_automation()], actors={"alice": ("approver",)}, agents=AGENTS)
    run(app, store_url, once=True, linger=0)
    store = open_store(store_url)
    try:
        policies = store.registry().policies
        assert sorted(policies) == ["helper", "plain"]
        assert Policy.from_plain(policies["helper"].policy) == app.policies()["helper"]
    finally:
        store.close()


CTX: Any = SimpleNamespace(item=SimpleNamespace(automation="plain", key="k-1"), now=None)
WHERE = "of plain on plain/k-1"


class Declared(Exception):
    """A class an automation declares retryable or terminal."""


def _watched(**hooks: Any) -> tuple[Automation, HookFailures]:
    app, failures = watched(App([dataclasses.replace(_automation(), **hooks)]))
    return app.automations[0], failures


def _raise(error: BaseException) -> Callable[..., Any]:
    def hook(*args: Any) -> Any:
        raise error

    return hook


@pytest.mark.parametrize(
    ("error", "declared"),
    [
        (TransientError("later"), {}),
        (TerminalError("never"), {}),
        (Declared("mine"), {"retry_on": (Declared,)}),
        (Declared("mine"), {"terminal_on": (Declared,)}),
    ],
)
def test_an_exception_the_automation_declares_is_no_failure_of_its_code(
    error: Exception, declared: dict[str, Any]
) -> None:
    """Declared retryable or terminal: the item's story, not a bug; raised again as it was."""
    automation, failures = _watched(observe=_raise(error), **declared)
    with pytest.raises(type(error)) as raised:
        automation.observe(CTX)
    assert raised.value is error and failures.lines == []


@pytest.mark.parametrize("name", ["observe", "propose", "execute", "qa", "revise"])
def test_every_hook_that_raises_undeclared_is_counted_once_and_raised_again(name: str) -> None:
    automation, failures = _watched(**{name: _raise(ValueError("no field 'host'"))})
    with pytest.raises(ValueError):
        getattr(automation, name)(CTX, *([None] if name in ("qa", "revise") else []))
    assert failures.lines == [f"{name} hook {WHERE} raised ValueError: no field 'host'"]


def test_an_async_hook_is_watched_as_a_plain_one() -> None:
    """An ``async def`` hook's raise and its answer are counted as a plain hook's are, and
    its answer comes back untouched."""
    answer = ReportForReview({"summary": "from observe"})

    async def observe(ctx: HookContext) -> Any:
        if ctx.now == "raise":
            raise ValueError("late")
        return answer

    automation, failures = _watched(observe=observe)
    assert in_thread(asyncio.run, automation.observe(CTX)) is answer
    with pytest.raises(ValueError):
        in_thread(asyncio.run, automation.observe(SimpleNamespace(item=CTX.item, now="raise")))
    assert failures.lines == [
        f"observe hook {WHERE} returned ReportForReview, which it may not return",
        f"observe hook {WHERE} raised ValueError: late",
    ]


@pytest.mark.parametrize(
    ("name", "output"),
    [
        ("observe", ReportForReview({})),
        ("propose", Evidence({})),
        ("execute", Evidence({})),
        ("qa", Evidence({})),
    ],
)
def test_an_outcome_a_hook_may_not_return_is_counted_and_returned_as_it_was(
    name: str, output: Any
) -> None:
    """The worker stops the item on it; the run's exit status says the code is wrong."""
    automation, failures = _watched(**{name: lambda *args: output})
    assert getattr(automation, name)(CTX, *([None] if name == "qa" else [])) is output
    assert failures.lines == [
        f"{name} hook {WHERE} returned {type(output).__name__}, which it may not return"
    ]


def test_an_outcome_a_hook_may_return_is_no_failure() -> None:
    automation, failures = _watched(execute=lambda ctx: Deliver([]))
    assert automation.observe(CTX) == Evidence({}) and automation.execute(CTX) == Deliver([])
    assert automation.qa(CTX, None) and failures.lines == []


def _discoveries(fail: bool) -> dict[str, Callable[..., Any]]:
    def generator(ctx: HookContext) -> Iterator[str]:
        yield from ("a", "b")
        if fail:
            raise ValueError("page 2 failed")

    async def async_generator(ctx: HookContext) -> AsyncIterator[str]:
        for key in ("a", "b"):
            yield key
        if fail:
            raise ValueError("page 2 failed")

    async def listed(ctx: HookContext) -> list[str]:
        if fail:
            raise ValueError("page 2 failed")
        return ["a", "b"]

    return {"generator": generator, "async generator": async_generator, "async def": listed}


@pytest.mark.parametrize("fail", [False, True])
@pytest.mark.parametrize("kind", ["generator", "async generator", "async def"])
def test_a_discovery_is_read_whole_and_a_failure_part_way_is_counted(kind: str, fail: bool) -> None:
    """Whatever kind of function discovery is, every key it gives comes back, and one that
    raises part of the way through (a second page that fails) is counted and raised again.
    The wrapped discovery hands its keys on one by one (a generator, an ``async`` one for an
    ``async`` hook), so its reader keeps its limits (``discovering.list_discovered``)."""
    automation, failures = _watched(discover=_discoveries(fail)[kind])

    def read() -> Any:
        found = automation.discover(CTX)
        if kind == "generator":
            return list(found)

        async def collect() -> list[Any]:
            return [key async for key in found]

        return in_thread(asyncio.run, collect())

    if not fail:
        assert read() == ["a", "b"] and failures.lines == []
        return
    with pytest.raises(ValueError):
        read()
    assert failures.lines == ["discovery of plain raised ValueError: page 2 failed"]


def test_the_failures_given_are_the_ones_told_and_echoed() -> None:
    """``stopline check`` passes its own list (and ``run`` its printer): each line lands there,
    and is echoed as it happens."""
    echoed: list[str] = []
    given = HookFailures(echo=echoed.append)
    raising = dataclasses.replace(_automation(), observe=_raise(ValueError("x")))
    app, failures = watched(App([raising]), given)
    with pytest.raises(ValueError):
        app.automations[0].observe(CTX)
    assert failures is given
    assert given.lines == echoed == [f"observe hook {WHERE} raised ValueError: x"]


class SaysTransient(Exception):
    """An undeclared exception whose message cannot be read: reading it raises a declared
    one (``TransientError``)."""

    def __str__(self) -> str:
        raise TransientError("asked my message")


def test_an_undeclared_exception_is_counted_and_raised_again_whatever_its_str_raises() -> None:
    """Before, the count's message read ``str(exc)``: the ``TransientError`` it raised left the
    wrapper instead, so the worker recorded a retryable ``TransientError`` for an exception
    nobody classified, and the run did not count it as its code's failure."""
    error = SaysTransient()
    automation, failures = _watched(observe=_raise(error))
    with pytest.raises(SaysTransient):
        automation.observe(CTX)
    assert failures.lines == [f"observe hook {WHERE} raised SaysTransient: SaysTransient"]
