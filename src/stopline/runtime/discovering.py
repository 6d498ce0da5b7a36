"""Reading what a discovery hook lists, within its time and its limits.

A plain ``discover`` (a function returning an iterable, or a generator) is read on the hook's
thread, an ``async`` one (or an async generator) on the event loop, each entry passed through
the scheduler's check as it comes. Everything that runs code of the hook's happens within its
``hook_timeout``: the listing, each entry's own methods, and, when it raises, the exception's
class, message and traceback (:class:`DiscoveryFailed`). A listing longer than allowed is
:class:`TooManyKeys`; one abandoned at its time is read no further, and a generator is closed
either way.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import Any

from ..core.failures import MAX_CLASS
from .hooks import (
    HookRunner,
    HookTimeout,
    class_name,
    describe,
    format_traceback,
    is_async,
    safe_text,
)


class TooManyKeys(Exception):
    """A discovery listed more entries than it may (``list_discovered``'s ``most``)."""


class DiscoveryFailed(Exception):
    """What a discovery raised, told within its time: the real name of its class, its
    message and its traceback, as text (asking the exception itself runs the hook's code)."""

    def __init__(self, error: BaseException) -> None:
        self.failure_class = safe_text(class_name(error), MAX_CLASS)
        self.message = describe(error)
        self.trace = format_traceback(error) or ""
        self.too_many = type(error) is TooManyKeys  # stopline's refusal, not the hook's raise
        super().__init__(self.failure_class)


def list_discovered(
    runner: HookRunner,
    discover: Callable[..., Any],
    ctx: Any,
    timeout: float,
    each: Callable[[Any], Any] = lambda entry: entry,
    most: int | None = None,
) -> tuple[list[Any] | None, BaseException | None]:
    """What a discovery hook lists, read to its end and each entry passed through ``each``
    within ``timeout`` seconds (a plain generator on the hook's thread, an ``async`` one on
    the event loop), as :meth:`HookRunner.run` answers: ``(entries, None)`` or ``(None, what
    it raised)``; raises :class:`HookTimeout` past its time. A listing of more than ``most``
    entries is :class:`TooManyKeys`; one abandoned at its time is read no further (the next
    entry it yields ends it). Either way a generator is closed, its ``finally`` run."""
    abandoned = threading.Event()

    def take(entries: list[Any], entry: Any) -> None:
        if abandoned.is_set():
            raise HookTimeout  # on the abandoned thread: nobody reads it
        if most is not None and len(entries) >= most:
            raise TooManyKeys(f"discovery listed more than {most} entries; nothing was written")
        entries.append(each(entry))

    call: Callable[[Any], Any]
    if inspect.isasyncgenfunction(discover):

        async def listed_async_gen(c: Any) -> list[Any]:
            entries: list[Any] = []
            try:
                source = discover(c)
                try:
                    async for entry in source:
                        take(entries, entry)
                finally:
                    await source.aclose()
            except asyncio.CancelledError:
                raise
            except BaseException as error:  # told here, within the hook's time
                raise DiscoveryFailed(error) from None
            return entries

        call = listed_async_gen
    else:

        async def listed_async(c: Any) -> list[Any]:
            try:
                return read(await discover(c))
            except asyncio.CancelledError:
                raise
            except BaseException as error:  # told here, within the hook's time
                raise DiscoveryFailed(error) from None

        def read(found: Any) -> list[Any]:
            entries: list[Any] = []
            source = iter(found)
            try:
                for entry in source:
                    take(entries, entry)
            finally:
                if inspect.isgenerator(source):
                    source.close()
            return entries

        def listed(c: Any) -> list[Any]:
            try:
                return read(discover(c))
            except BaseException as error:  # told here, within the hook's time
                raise DiscoveryFailed(error) from None

        call = listed_async if is_async(discover) else listed
    try:
        entries, error = runner.run(call, (ctx,), timeout)
    except HookTimeout:
        abandoned.set()
        raise
    return (None, error) if error is not None else (entries, None)
