"""Named SQL queries (``-- name: x`` blocks) loaded from the package's ``sql/`` folder.

A query file ``<file>.sql`` may exist in ``sql/common/`` (the statements that read the same in
both dialects, written once) and in ``sql/<dialect>/`` (those that differ). A name defined in
both is an error: every statement has exactly one source. ``{{name}}`` in a query stands for the
text of query ``name`` of the same file set (a fragment two queries share; a fragment may
hold fragments).
"""

from __future__ import annotations

import re
from importlib import resources

from .errors import StoreError

COMMON = "common"
_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
_PARAM = re.compile(r"(?<![:\w]):(\w+)")
_FRAGMENT = re.compile(r"\{\{(\w+)\}\}")  # {{name}}: the text of query ``name``, shared


def _parse(text: str, pyformat: bool) -> dict[str, str]:
    parts = _NAME.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise StoreError(f"query {name!r} is defined twice in one file")
        sql = "\n".join(line for line in body.splitlines() if not line.strip().startswith("--"))
        sql = sql.strip().rstrip(";")
        if pyformat:
            sql = _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))
        queries[name] = sql
    return queries


def load(dialect: str, pyformat: bool = False, file: str = "queries") -> dict[str, str]:
    """The named queries of ``sql/common/<file>.sql`` and ``sql/<dialect>/<file>.sql``."""
    root = resources.files(__package__).joinpath("sql")
    found: dict[str, str] = {}
    for folder in (COMMON, dialect):
        entry = root.joinpath(folder, f"{file}.sql")
        if not entry.is_file():
            continue
        queries = _parse(entry.read_text("utf-8"), pyformat)
        twice = sorted(found.keys() & queries.keys())
        if twice:
            raise StoreError(f"{file}.sql: {twice} defined in both common and {dialect}")
        found.update(queries)
    if not found:
        raise StoreError(f"no queries named {file!r} for the {dialect} store")
    return {name: _expand(sql, found) for name, sql in found.items()}


def _expand(sql: str, found: dict[str, str], depth: int = 0) -> str:
    """``sql`` with every ``{{name}}`` replaced by query ``name``, itself expanded."""
    if depth > 5:
        raise StoreError("query fragments nest too deep (a fragment that names itself?)")
    return _FRAGMENT.sub(lambda m: _expand(found[m.group(1)], found, depth + 1), sql)


def migrations(dialect: str) -> list[tuple[int, str, str]]:
    """``(version, name, sql)`` of every migration file, in order."""
    folder = resources.files(__package__).joinpath("sql", dialect)
    found = []
    for entry in folder.iterdir():
        match = re.match(r"^(\d{4})_(\w+)\.sql$", entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    return sorted(found)
