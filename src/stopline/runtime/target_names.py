"""The name a target's objects are held under (``store/remote_holds.py``), and the check that
an app's targets can share one store's holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.artifact_records import remote_text_problem
from ..targets.base import Target


def target_name(target: Target) -> str:
    """The name a target's objects are held under: its ``name``, or its class's when that
    cannot be read or is no name (its code, as a hook's is)."""
    try:
        name = target.name
    except Exception:
        name = None
    if not isinstance(name, str) or remote_text_problem(name):
        return type(target).__name__
    return str.__str__(name)


def shared_target_problem(targets: Mapping[str, Target]) -> str | None:
    """Why the targets of these automations (by automation name) cannot share one store's
    remote holds, or None. Holds are kept by target name, so one system under two names would
    let two items hold one object under each name. (Two systems under one name only share a
    space of ids: an id both answered would stop the second item, which is safe.) A target
    that does not ``describe`` itself is not compared."""
    seen: list[tuple[str, str, dict[str, Any]]] = []  # (automation, name, system)
    for automation, target in targets.items():
        describe = getattr(target, "describe", None)
        system = dict(describe()) if callable(describe) else {}
        system.pop("name", None)
        if not system:
            continue
        name = target_name(target)
        for other, other_name, other_system in seen:
            if other_name != name and other_system == system:
                return (
                    f"the targets of automations {other!r} and {automation!r} are one system "
                    f"({system}) under two names, {other_name!r} and {name!r}; use one name"
                )
        seen.append((automation, name, system))
    return None
