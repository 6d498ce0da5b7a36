"""What changed between two proposals, field by field, and which of an item's proposals a
digest (or a digest prefix) names."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .canonical import to_plain

MIN_PREFIX = 12  # the shortest digest prefix a person may type (commands.fields.DIGEST)

# The proposal fields a person compares, in the order they are shown.
DIFF_FIELDS = (
    "action",
    "target",
    "params",
    "rationale",
    "evidence",
    "proposer",
    "edited_by",
    "editors",
    "returned_by",
    "policy_version",
    "required_roles",
    "required_approvals",
    "max_evidence_age",
    "separation_of_duties",
)


def _leaves(value: Any, path: str) -> dict[str, Any]:
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for key in sorted(value):
            out.update(_leaves(value[key], f"{path}.{key}"))
        return out
    return {path: to_plain(value)}


def proposal_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Field by field (nested parameters by their path), what differs from ``before`` to
    ``after``: ``[{"field", "before", "after"}]``, in :data:`DIFF_FIELDS` order."""
    out: list[dict[str, Any]] = []
    missing = object()
    for name in DIFF_FIELDS:
        old = _leaves(before.get(name), name) if name == "params" else {name: before.get(name)}
        new = _leaves(after.get(name), name) if name == "params" else {name: after.get(name)}
        for path in sorted(set(old) | set(new)):
            a, b = old.get(path, missing), new.get(path, missing)
            if a != b:
                out.append(
                    {
                        "field": path,
                        "before": None if a is missing else to_plain(a),
                        "after": None if b is missing else to_plain(b),
                    }
                )
    return out


def _short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= width else text[: width - 1] + "…"


def diff_lines(diff: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per changed field: ``params.draft: 'Hello' -> 'Hi'``."""
    return [f"{d['field']}: {_short(d['before'])} -> {_short(d['after'])}" for d in diff]


def matching(digest: str, proposals: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The one proposal whose digest is ``digest`` or starts with it (at least
    :data:`MIN_PREFIX` characters), else ``None``."""
    if len(digest) < MIN_PREFIX:
        return None
    found = [p for p in proposals if str(p.get("digest", "")).startswith(digest)]
    return found[0] if len(found) == 1 else None
