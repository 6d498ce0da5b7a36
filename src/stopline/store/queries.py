"""Named SQL queries loaded from ``sql/<dialect>/queries.sql`` (``-- name: x`` blocks)."""

from __future__ import annotations

import re
from importlib import resources

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
_PARAM = re.compile(r"(?<![:\w]):(\w+)")


def load(dialect: str, pyformat: bool = False) -> dict[str, str]:
    text = resources.files(__package__).joinpath("sql", dialect, "queries.sql").read_text("utf-8")
    parts = _NAME.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        sql = "\n".join(line for line in body.splitlines() if not line.strip().startswith("--"))
        sql = sql.strip().rstrip(";")
        if pyformat:
            sql = _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))
        queries[name] = sql
    return queries


def migrations(dialect: str) -> list[tuple[int, str, str]]:
    """``(version, name, sql)`` of every migration file, in order."""
    folder = resources.files(__package__).joinpath("sql", dialect)
    found = []
    for entry in folder.iterdir():
        match = re.match(r"^(\d{4})_(\w+)\.sql$", entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    return sorted(found)
