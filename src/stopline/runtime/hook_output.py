"""What a hook's output must be before it becomes a command: the right shape and within the
input limits.

The shape is the type of each field of an outcome (``Evidence.data`` a mapping,
``Proposal.action`` a string, every artifact an ``Artifact``, ...). The limits are the input
boundary every document from outside passes (nesting depth, size, finite numbers, integers the
canonical form holds exactly, valid Unicode). An output that breaks either is recorded as the
failure ``invalid_output`` (terminal: the same hook on the same record would answer the same),
naming the field and the limit; nothing of it reaches a record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from datetime import UTC, datetime
from typing import Any

from ..core import limits, severity
from ..core.artifacts import Artifact, Asset
from ..core.commands import QAResult
from ..core.limits import text_problem
from ..core.severity import SEVERITIES
from .outcomes import (
    Deliver,
    Evidence,
    Fail,
    NeedsEyes,
    NothingToDo,
    Proposal,
    ReportForReview,
    RetryLater,
)

NoneType = type(None)
SHOWN = 3  # problems named in a failure message

SHAPES: dict[type, dict[str, tuple[type, ...]]] = {
    Evidence: {"data": (Mapping,), "observed_at": (datetime, NoneType)},
    Proposal: {
        "action": (str,),
        "params": (Mapping,),
        "target": (str,),
        "rationale": (str,),
        "severity": (str, NoneType),
    },
    ReportForReview: {"report": (Mapping,)},
    NothingToDo: {"reason": (str,)},
    NeedsEyes: {"why": (str,), "owner": (str,), "evidence": (Mapping,)},
    RetryLater: {"message": (str,), "failure_class": (str,)},
    Fail: {"message": (str,), "failure_class": (str,)},
    Deliver: {"artifacts": (Sequence,), "result": (Mapping,)},
    QAResult: {"passed": (bool,), "details": (Mapping,)},
    Artifact: {
        "key": (str,),
        "title": (str,),
        "summary": (str,),
        "body": (str,),
        "assets": (Sequence,),
        "metadata": (Mapping,),
    },
    Asset: {"name": (str,), "media_type": (str,), "data": (bytes,)},
}
TEXTS = frozenset({(Artifact, "key")})  # text every record of a delivery names, a column too
MEMBERS: dict[tuple[type, str], type] = {  # what each member of a sequence field must be
    (Deliver, "artifacts"): Artifact,
    (Artifact, "assets"): Asset,
}


def limit_violations(value: Any, path: str) -> list[str]:
    """Every input limit ``value`` breaks (the one place hook outputs meet the boundary)."""
    return [str(v) for v in limits.check(value, path=path)]


def problems(hook: str, output: Any) -> list[str]:
    """What is wrong with ``output`` of ``hook``: its shape, then its limits (empty: fine).
    A list (what a revise hook returns) is checked member by member."""
    root = f"$.{hook}"
    if isinstance(output, list | tuple):
        found: list[str] = []
        for index, member in enumerate(output[: limits.DEFAULT.max_members + 1]):
            found += shape_problems(member, f"{root}[{index}]")
            if len(found) >= SHOWN:
                break
        # a member of no outcome type is recorded by its type's name only (``Unexpected``)
        named = [m.type_name if isinstance(m, Unexpected) else m for m in output]
        return found or limit_violations(named, root)
    found = shape_problems(output, root)
    if isinstance(output, Proposal) and not found and not severity.valid(output.severity):
        found = [f"{root}.severity: is {output.severity!r}, not one of {', '.join(SEVERITIES)}"]
    if found or not is_dataclass(output) or isinstance(output, type):
        return found  # another type: nothing of it is recorded but its name
    plain = {f.name: getattr(output, f.name) for f in fields(output)}
    return limit_violations(plain, root)


def shape_problems(output: Any, path: str) -> list[str]:
    """Fields of a known outcome type (and of the artifacts and assets in it) that hold the
    wrong type; nothing for a type without a shape."""
    found: list[str] = []
    stack = [(output, path)]
    while stack and len(found) < SHOWN:
        value, at = stack.pop()
        shape = next((SHAPES[t] for t in type(value).__mro__ if t in SHAPES), None)
        for name, allowed in (shape or {}).items():
            member: Any = getattr(value, name, None)
            if not _fits(member, allowed):
                wanted = " or ".join("None" if t is NoneType else t.__name__ for t in allowed)
                found.append(f"{at}.{name}: is {type(member).__name__}, not {wanted}")
                continue
            if any(isinstance(value, t) and n == name for t, n in TEXTS):
                problem = text_problem(str.__str__(member))
                if problem is not None:
                    found.append(f"{at}.{name}: {problem}")
                    continue
            element_type = next(
                (m for (t, n), m in MEMBERS.items() if n == name and isinstance(value, t)), None
            )
            if element_type is None:
                continue
            for index, element in enumerate(member):
                if not isinstance(element, element_type):
                    kind = type(element).__name__
                    found.append(f"{at}.{name}[{index}]: is {kind}, not {element_type.__name__}")
                    break
                stack.append((element, f"{at}.{name}[{index}]"))
    return found


def _fits(value: Any, allowed: tuple[type, ...]) -> bool:
    """``value`` is one of ``allowed`` (text is not taken for a sequence of characters)."""
    if isinstance(value, str | bytes) and not (str in allowed or bytes in allowed):
        return False
    return isinstance(value, allowed)


@dataclass(frozen=True)
class Unexpected:
    """An output of no outcome type, by the name of its type (all the worker reads of it)."""

    type_name: str


def type_name(output: Any) -> str:
    """The name of what a hook returned, as a message names it."""
    return output.type_name if isinstance(output, Unexpected) else type(output).__name__


def plain_copy(output: Any) -> Any:
    """A copy of an output that passed :func:`problems`, made of the outcome types and exact
    built-in values, taken while the hook's time runs (``hooks.call_hook``). What the worker
    reads after that runs none of the hook's code: not a mapping whose ``len`` never returns,
    not a string subclass, not a value the hook's thread goes on changing after the check."""
    if isinstance(output, list | tuple):  # what a revise hook returns
        return [plain_copy(member) for member in output]
    base = next((t for t in type(output).__mro__ if t in SHAPES), None)
    if base is None or not is_dataclass(output) or isinstance(output, type):
        return Unexpected(str.__str__(type(output).__name__))
    copied = {}
    for f in fields(base):
        value = getattr(output, f.name)
        if (base, f.name) in MEMBERS:
            copied[f.name] = tuple(plain_copy(member) for member in value)
        else:
            copied[f.name] = plain_value(value)
    return base(**copied)


def plain_value(value: Any) -> Any:
    """A value within the limits as exact built-in values (see :func:`plain_copy`)."""
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, datetime):
        utc = value.astimezone(UTC)
        return datetime(*utc.timetuple()[:6], utc.microsecond, tzinfo=UTC)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(memoryview(value))
    if isinstance(value, Mapping):
        return {str.__str__(key): plain_value(member) for key, member in value.items()}
    if isinstance(value, Sequence):
        return [plain_value(member) for member in value]
    return plain_value(value.to_plain())  # the limits took nothing else
