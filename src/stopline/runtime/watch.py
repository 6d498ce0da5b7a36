"""Hook failures that ``stopline run`` and ``stopline check`` report and exit on.

The worker already turns a hook that raises something undeclared into a stop
(``exception``, "needs eyes"), and the scheduler logs a discovery that raises and writes
nothing. Both are right for the items, and both are failures of the automation's own code that a
script running ``stopline run`` from cron must see in the exit status. :func:`watched` wraps an
app's hooks so that each such failure is also counted here; the hooks' behaviour, and what the
worker decides from it, are unchanged (the exception is raised again, the value returned as it
was).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..core.commands import QAResult
from . import hook_output, outcomes
from .automation import App, Automation, HookContext
from .hooks import class_name, describe, is_async

# What each hook may return (anything else stops the item in ``exception``).
_ANY_HOOK = (outcomes.NeedsEyes, outcomes.RetryLater, outcomes.Fail)
ALLOWED: dict[str, tuple[type, ...]] = {
    "observe": (outcomes.Evidence, *_ANY_HOOK),
    "propose": (outcomes.Proposal, outcomes.ReportForReview, outcomes.NothingToDo, *_ANY_HOOK),
    "execute": (outcomes.Deliver, *_ANY_HOOK),
    "qa": (QAResult,),
}


@dataclass
class HookFailures:
    """Failures of an app's own code, one line each, in the order they happened."""

    lines: list[str] = field(default_factory=list)
    echo: Callable[[str], None] | None = None  # also told each line as it happens
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)
            if self.echo is not None:
                self.echo(line)

    def __bool__(self) -> bool:
        return bool(self.lines)


def _where(ctx: Any) -> str:
    item = getattr(ctx, "item", None)
    return "" if item is None else f" on {item.automation}/{item.key}"


def _declared(automation: Automation, exc: BaseException) -> bool:
    return isinstance(exc, automation.retry_on + automation.terminal_on)


def _wrap_discover(a: Automation, failures: HookFailures) -> Callable[[HookContext], Any]:
    """``a.discover`` as a generator of what it lists, entry by entry, so that whoever reads it
    (``discovering.list_discovered``) keeps its limits and can stop reading it: a copy of the whole
    listing made here would read a listing that never ends forever."""
    hook: Any = a.discover  # plain, async, or an async generator

    def failed(exc: Exception) -> None:
        failures.add(f"discovery of {a.name} raised {class_name(exc)}: {describe(exc)}")

    if inspect.isasyncgenfunction(hook) or is_async(hook):

        @functools.wraps(hook)
        async def discover_async(ctx: HookContext) -> AsyncIterator[Any]:
            try:
                if inspect.isasyncgenfunction(hook):
                    source = hook(ctx)
                    try:
                        async for entry in source:
                            yield entry
                    finally:
                        await source.aclose()
                else:
                    for entry in await hook(ctx):
                        yield entry
            except Exception as exc:
                failed(exc)
                raise

        return discover_async

    @functools.wraps(hook)
    def discover(ctx: HookContext) -> Iterator[Any]:
        try:
            yield from hook(ctx)  # a generator raises while it is read
        except Exception as exc:
            failed(exc)
            raise

    return discover


def _wrap(a: Automation, name: str, failures: HookFailures) -> Callable[..., Any]:
    hook = getattr(a, name)

    def raised(ctx: HookContext, exc: Exception) -> None:
        if not _declared(a, exc):
            what = f"{class_name(exc)}: {describe(exc)}"  # the exception's own code raises
            failures.add(f"{name} hook of {a.name}{_where(ctx)} raised {what}")

    def returned(ctx: HookContext, out: Any) -> Any:
        allowed = ALLOWED.get(name)
        if allowed is not None and not isinstance(out, allowed):
            failures.add(
                f"{name} hook of {a.name}{_where(ctx)} returned {type(out).__name__},"
                " which it may not return"
            )
        elif problems := hook_output.problems(name, out):  # recorded as invalid_output
            failures.add(
                f"{name} hook of {a.name}{_where(ctx)} returned invalid output: {problems[0]}"
            )
        return out

    if is_async(hook):

        @functools.wraps(hook)
        async def run_async(ctx: HookContext, *args: Any) -> Any:
            try:
                out = await hook(ctx, *args)
            except Exception as exc:
                raised(ctx, exc)
                raise
            return returned(ctx, out)

        return run_async

    @functools.wraps(hook)
    def run(ctx: HookContext, *args: Any) -> Any:
        try:
            out = hook(ctx, *args)
        except Exception as exc:
            raised(ctx, exc)
            raise
        return returned(ctx, out)

    return run


def watched(app: App, failures: HookFailures | None = None) -> tuple[App, HookFailures]:
    """A copy of ``app`` whose hooks report their failures to ``failures`` (a new one when
    none is given). The automations' names, policies and targets are the same objects, and
    every other field of the app (its actors, its agent automations) is kept as it is."""
    failures = failures if failures is not None else HookFailures()
    automations = []
    for a in app.automations:
        hooks: dict[str, Any] = {"discover": _wrap_discover(a, failures)}
        for name in ("observe", "propose", "execute", "qa", "revise"):
            if getattr(a, name) is not None:
                hooks[name] = _wrap(a, name, failures)
        automations.append(dataclasses.replace(a, **hooks))
    return dataclasses.replace(app, automations=automations), failures  # every other field kept
