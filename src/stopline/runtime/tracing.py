"""Optional OpenTelemetry spans: one per step, per hook and per notification attempt.

stopline does not depend on OpenTelemetry. When the ``opentelemetry`` API package is
importable, :func:`span` opens a span on the tracer ``stopline`` (exported wherever the host
configured the global tracer provider, e.g. with ``opentelemetry-instrument`` or the SDK);
otherwise it does nothing at all. An error inside the tracing library never reaches the step.
While no tracer provider is configured (OpenTelemetry's own proxy or no-op one is the global
provider), a span costs nothing: the check is made at each span, so a provider configured
later is used from then on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

log = logging.getLogger("stopline.tracing")

try:  # the API only: exporting is the host's business
    from opentelemetry import trace as _trace

    _UNCONFIGURED: tuple[type, ...] = (_trace.ProxyTracerProvider, _trace.NoOpTracerProvider)
except ImportError:  # pragma: no cover - exercised where the package is absent
    _trace = None  # type: ignore[assignment]
    _UNCONFIGURED = ()

_NOTHING = nullcontext()


def enabled() -> bool:
    """Whether spans are made (the OpenTelemetry API is installed)."""
    return _trace is not None


def span(name: str, **attributes: Any) -> AbstractContextManager[None]:
    """A span named ``name`` around the block, with ``attributes`` (``None`` values left
    out); a no-op without OpenTelemetry or a configured provider. An exception of the block
    is recorded on the span and raised again."""
    if _trace is None or type(_trace.get_tracer_provider()) in _UNCONFIGURED:
        return _NOTHING
    return _span(name, attributes)


@contextmanager
def _span(name: str, attributes: dict[str, Any]) -> Iterator[None]:
    assert _trace is not None
    try:
        tracer = _trace.get_tracer("stopline")
        manager = tracer.start_as_current_span(name)
        current = manager.__enter__()
        for key, value in attributes.items():
            if value is not None:
                current.set_attribute(f"stopline.{key}", str(value))
    except Exception:  # a broken tracer must not stop a step
        log.debug("could not open span %s", name, exc_info=True)
        yield
        return
    try:
        yield
    except BaseException as error:
        manager.__exit__(type(error), error, error.__traceback__)
        raise
    manager.__exit__(None, None, None)
