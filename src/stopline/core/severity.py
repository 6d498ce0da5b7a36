"""How urgent a stopped item is: a closed set of severities, set by an automation's proposal
(or its default), shown in the inbox and sorted on.

Severity never decides anything: no rule of the core reads it. It only orders the inbox.
"""

from __future__ import annotations

from collections.abc import Mapping

SEVERITIES: tuple[str, ...] = ("info", "low", "normal", "high", "critical")
DEFAULT = "normal"
RANK: dict[str, int] = {name: rank for rank, name in enumerate(SEVERITIES)}


def valid(value: object) -> bool:
    """Whether ``value`` is one of :data:`SEVERITIES` (``None``: unset, also valid)."""
    return value is None or (isinstance(value, str) and value in RANK)


def require(value: object, where: str) -> str | None:
    """``value`` when it is a severity or ``None``; else a ``ValueError`` that names the set."""
    if not valid(value):
        raise ValueError(f"{where} must be one of {', '.join(SEVERITIES)} (got {value!r})")
    return value  # type: ignore[return-value]


def of(data_severity: object) -> str:
    """The severity an item shows: its own, else :data:`DEFAULT`."""
    return data_severity if isinstance(data_severity, str) and data_severity in RANK else DEFAULT


def rank(data: object) -> int:
    """The rank in :data:`SEVERITIES` of the severity an item's ``data`` gives it (the inbox
    sorts on it; absent or not a severity: :data:`DEFAULT`)."""
    return RANK[of(data.get("severity") if isinstance(data, Mapping) else None)]
