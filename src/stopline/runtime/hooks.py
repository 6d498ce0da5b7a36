"""Calling a hook so that nothing it does can take the worker down.

A plain hook runs on a thread of its own (:class:`HookRunner`), or, in a worker that runs
several items at once, in place on its step's thread, timed by a watchdog (``watchdog.py``); an
``async def`` hook runs as a task on the process's one event loop (:func:`event_loop`), so many
hooks that wait on the network share one thread. The worker waits for any of them at most its
automation's ``hook_timeout``. Whatever happens becomes a value (:func:`call_hook`):

* the hook's output, when it has the shape of an outcome and stays within the input limits;
* :class:`HookFailed` otherwise, with the failure's real class and message:
  ``hook_timeout`` (the worker stopped waiting and abandoned the thread), ``invalid_output``
  (the output breaks its shape or the limits, see ``hook_output.py``), or the name of the
  exception the hook raised: any exception, ``RecursionError`` and ``MemoryError`` included.

An abandoned plain hook may still finish, and an abandoned ``async`` hook's task is cancelled:
either way what it returns is dropped, never committed. The step's
failure is committed under the lease the worker holds, and the next attempt is a new claim
with a new fencing token, so nothing that thread could still do is written under its lease.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import queue
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.failures import HOOK_TIMEOUT, INVALID_OUTPUT, MAX_CLASS
from ..core.limits import truncate_traceback
from . import hook_output, tracing
from .automation import Automation, HookContext
from .watchdog import Abandoned, Watchdog

log = logging.getLogger("stopline.worker")
MAX_MESSAGE = 500


@dataclass(frozen=True)
class HookFailed:
    """A hook raised, ran past its time, or returned what may not be recorded. ``retryable``
    is the automation's word (``retry_on``/``terminal_on``), else ``None``: the rules of
    ``core/failures.py`` for ``failure_class`` decide."""

    failure_class: str
    message: str
    retryable: bool | None = None
    # where an exception was raised (bounded in the record; not part of equality)
    traceback: str | None = field(default=None, compare=False)


class HookTimeout(Exception):
    """The hook ran past its time limit and was abandoned."""


@dataclass
class _Call:
    function: Callable[..., Any]
    args: tuple[Any, ...]
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.function(*self.args)
        except BaseException as error:  # a hook's SystemExit is its failure, not the worker's
            self.error = error
        finally:
            self.done.set()


def _serve(inbox: queue.SimpleQueue[_Call | None]) -> None:
    while (call := inbox.get()) is not None:
        call.run()
        del call  # an abandoned hook's result is not kept alive by this thread


def is_async(function: Any) -> bool:
    """An ``async def`` function (or an object whose ``__call__`` is one)."""
    if inspect.iscoroutinefunction(function):
        return True
    call = type(function).__call__ if not inspect.isroutine(function) else None
    return call is not None and inspect.iscoroutinefunction(call)


HELD_AFTER = 1.0  # seconds a loop may take to run a no-op once a hook on it ran past its time
_loop: asyncio.AbstractEventLoop | None = None
_loop_thread: threading.Thread | None = None
_loop_lock = threading.Lock()


def event_loop() -> asyncio.AbstractEventLoop:
    """The event loop every ``async`` hook of this process runs on (a daemon thread, started
    on first use, and again after a hook held the last one: :func:`retire_if_held`)."""
    global _loop, _loop_thread
    with _loop_lock:
        if _loop is None or _loop_thread is None or not _loop_thread.is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, daemon=True)
            thread.name = "stopline-async-hooks"
            thread.start()
            _loop, _loop_thread = loop, thread
        return _loop


def retire_if_held(loop: asyncio.AbstractEventLoop) -> None:
    """After a hook on ``loop`` ran past its time: a loop that cannot run a no-op within
    ``HELD_AFTER`` seconds is held by a hook that blocks its thread (a blocking call inside an
    ``async def``), and every later hook sent to it would time out too. Later hooks get a new
    loop; this one ends once its last task has, and its thread with it (a thread left behind,
    as a plain hook's is)."""
    global _loop, _loop_thread
    if _loop is not loop:
        return  # retired already
    try:
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop).result(HELD_AFTER)
        return
    except concurrent.futures.TimeoutError:
        pass
    with _loop_lock:
        if _loop is not loop:
            return
        _loop = _loop_thread = None
    log.error("an async hook holds the event loop's thread; later async hooks get a new loop")
    asyncio.run_coroutine_threadsafe(_end_when_idle(), loop)


async def _end_when_idle() -> None:
    me = asyncio.current_task()
    while others := {t for t in asyncio.all_tasks() if t is not me}:
        await asyncio.wait(others)
    asyncio.get_running_loop().stop()


class HookRunner:
    """Runs one plain hook at a time on a daemon thread the worker can stop waiting for. After
    a timeout the thread is left to finish (or hang) alone, and the next hook gets a new one.
    An ``async`` hook runs on the event loop instead, and is cancelled on a timeout.

    With a ``watchdog`` (a step thread of a worker that runs several items at once), a plain
    hook given an ``on_timeout`` runs in place, on the calling thread, and the watchdog keeps
    its time (``watchdog.py``)."""

    def __init__(self, watchdog: Watchdog | None = None) -> None:
        self._inbox: queue.SimpleQueue[_Call | None] | None = None
        self.watchdog = watchdog
        self.abandoned = 0  # threads left behind by a timeout

    def run(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        timeout: float,
        on_timeout: Callable[[], None] | None = None,
    ) -> tuple[Any, BaseException | None]:
        """``(result, None)`` or ``(None, the exception raised)``; :class:`HookTimeout` when
        ``function`` has not returned after ``timeout`` seconds. Called in place (a watchdog
        and an ``on_timeout``), a call past its time has ``on_timeout`` run on the
        watchdog's thread instead, and raises :class:`Abandoned` here once it returns."""
        if is_async(function):
            return self._run_async(function, args, timeout)
        if self.watchdog is not None and on_timeout is not None:
            return self._run_in_place(self.watchdog, function, args, timeout, on_timeout)
        inbox = self._inbox
        if inbox is None:
            inbox = self._inbox = queue.SimpleQueue()
            thread = threading.Thread(target=_serve, args=(inbox,), daemon=True)
            thread.name = "stopline-hook"
            thread.start()
        call = _Call(function, args)
        inbox.put(call)
        if not call.done.wait(timeout):
            inbox.put(None)  # the thread ends when the hook returns, if it ever does
            self._inbox = None
            self.abandoned += 1
            raise HookTimeout
        return call.result, call.error

    @staticmethod
    def _run_in_place(
        watchdog: Watchdog,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        timeout: float,
        on_timeout: Callable[[], None],
    ) -> tuple[Any, BaseException | None]:
        watched = watchdog.watch(timeout, on_timeout)
        result: Any = None
        error: BaseException | None = None
        try:
            result = function(*args)
        except BaseException as raised:  # a hook's SystemExit is its failure, not the worker's
            error = raised
        if not watchdog.finish(watched):
            del result, error  # an abandoned hook's answer is never looked at
            raise Abandoned
        return result, error

    def _run_async(
        self, function: Callable[..., Any], args: tuple[Any, ...], timeout: float
    ) -> tuple[Any, BaseException | None]:
        loop = event_loop()
        try:
            future = asyncio.run_coroutine_threadsafe(guarded(function(*args)), loop)
        except BaseException as error:  # raised before the coroutine ever ran
            return None, error
        try:
            result: tuple[Any, BaseException | None] = future.result(timeout)
        except concurrent.futures.TimeoutError:  # the hook's own are in its result
            future.cancel()  # the task is cancelled; whatever it returns is dropped
            self.abandoned += 1
            retire_if_held(loop)
            raise HookTimeout from None
        except BaseException as error:  # cancelled from outside
            return None, error
        return result


async def guarded(work: Any) -> tuple[Any, BaseException | None]:
    """Await a hook's coroutine; what it raises (``SystemExit`` too) is its failure and never
    reaches the event loop, which goes on serving every other hook."""
    try:
        return await work, None
    except asyncio.CancelledError:
        raise
    except BaseException as error:
        return None, error


def call_hook(
    runner: HookRunner,
    automation: Automation,
    name: str,
    hook: Callable[..., Any],
    context: HookContext,
    *args: Any,
    on_timeout: Callable[[HookFailed], None] | None = None,
) -> Any:
    """Run ``hook``; its output, or :class:`HookFailed` for anything it raised or caused.
    With ``on_timeout`` (see :class:`HookRunner`), a plain hook past its time has
    ``on_timeout(the timeout's HookFailed)`` go on with the step elsewhere, and this call
    raises :class:`Abandoned` when the hook returns."""
    limit = automation.hook_timeout
    late = None if on_timeout is None else lambda: on_timeout(timed_out(automation, name))
    try:
        with tracing.span("stopline.hook", hook=name, automation=automation.name):
            output, error = runner.run(
                _answered(hook, automation, name), (context, *args), limit, late
            )
    except HookTimeout:
        return timed_out(automation, name)
    if error is not None:  # the hook could not even be called
        return classify(error, automation, name)
    return output


def _answered(hook: Callable[..., Any], automation: Automation, name: str) -> Callable[..., Any]:
    """``hook``, followed, within its time, by everything that runs code of the hook's: what
    it raised described, or its output checked and copied (:func:`hook_output.plain_copy`).
    A hook that returns a value whose methods never return, or raises an exception whose
    ``__str__`` never does, is abandoned at its ``hook_timeout`` like one that never returns."""

    def answer(output: Any) -> Any:
        found = hook_output.problems(name, output)
        if found:
            why = f"the {name} hook's output was not recorded: " + "; ".join(found[:3])
            return HookFailed(INVALID_OUTPUT, safe_text(why))
        try:
            copied = hook_output.plain_copy(output)
        except Exception as error:  # a value that changed under the check, or that lied to it
            why = f"the {name} hook's output could not be copied: {class_name(error)}"
            return HookFailed(INVALID_OUTPUT, safe_text(why))
        found = hook_output.problems(name, copied)  # what goes on is the copy: checked too
        if found:
            why = f"the {name} hook's output changed after its check: " + "; ".join(found[:3])
            return HookFailed(INVALID_OUTPUT, safe_text(why))
        return copied

    if is_async(hook):

        async def answered_async(*args: Any) -> Any:
            try:
                output = await hook(*args)
            except asyncio.CancelledError:
                raise
            except BaseException as error:  # a hook's SystemExit is its failure
                return classify(error, automation, name)
            return answer(output)

        return answered_async

    def answered(*args: Any) -> Any:
        try:
            output = hook(*args)
        except BaseException as error:  # a hook's SystemExit is its failure, not the worker's
            return classify(error, automation, name)
        return answer(output)

    return answered


def timed_out(automation: Automation, name: str) -> HookFailed:
    """The failure of a hook that ran past its time, logged as it is recorded."""
    limit = automation.hook_timeout
    log.error("the %s hook of %s ran past %g s; abandoned", name, automation.name, limit)
    why = f"the {name} hook ran past its hook_timeout of {limit:g} s and was abandoned"
    return HookFailed(HOOK_TIMEOUT, why)


def classify(error: BaseException, automation: Automation, hook: str) -> HookFailed:
    """The failure an exception raised by a hook records: its class name and message;
    terminal or retryable as the automation's ``terminal_on`` / ``retry_on`` say (one of both
    is terminal: what no retry can fix is not retried). Never raises: an exception that
    raises when asked its class is of neither."""
    failure_class = safe_text(class_name(error), MAX_CLASS)
    message = describe(error)
    trace = format_traceback(error)
    for classes, retryable in ((automation.terminal_on, False), (automation.retry_on, True)):
        try:
            matches = isinstance(error, classes)
        except BaseException:  # a hostile __class__ (or __instancecheck__): not this word
            matches = False
        if matches:
            return HookFailed(failure_class, message, retryable=retryable, traceback=trace)
    log.error("the %s hook of %s raised %s: %s", hook, automation.name, failure_class, message)
    return HookFailed(failure_class, message, traceback=trace)


def format_traceback(error: BaseException) -> str | None:
    """The exception's traceback as text, its end kept within ``MAX_TRACEBACK``; ``None`` when
    it cannot be formatted (a hostile ``__str__``, a stack too deep). Never raises."""
    try:
        text = "".join(traceback.format_exception(error, limit=-20))
    except BaseException:  # formatting calls the exception's own code
        return None
    return truncate_traceback(text)


def class_name(error: object) -> str:
    """The real name of an exception's class, whatever its metaclass answers for
    ``__name__``."""
    return str.__str__(type.__dict__["__name__"].__get__(type(error)))


def describe(error: BaseException) -> str:
    """An exception's message, safe to record; its class name when it has none. Never raises
    (an exception whose ``__str__`` raises is described by its class)."""
    try:
        text = str.__str__(str(error))  # the text itself, not a str subclass's own methods
    except BaseException:  # a hostile __str__ must not escape
        text = ""
    return safe_text(text or class_name(error))


def safe_text(text: str, limit: int = MAX_MESSAGE) -> str:
    """At most ``limit`` characters of valid Unicode (a lone surrogate becomes ``?``)."""
    return text[:limit].encode("utf-8", "replace").decode("utf-8")
