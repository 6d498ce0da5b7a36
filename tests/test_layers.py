"""The layers of docs/architecture.md are checked, not hoped for."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "stopline"
# What the pure core may not touch: clocks, randomness, processes, files, network, databases.
IO_MODULES = {
    "os",
    "sys",
    "time",
    "random",
    "secrets",
    "uuid",
    "socket",
    "subprocess",
    "threading",
    "multiprocessing",
    "sqlite3",
    "psycopg",
    "psycopg_pool",
    "pathlib",
    "shutil",
    "tempfile",
    "urllib",
    "http",
    "httpx",
    "logging",
    "io",
    "asyncio",
    "select",
    "signal",
}


def imports(path: Path) -> list[tuple[int, str]]:
    """(level, module) of every import in a module; level > 0 is relative."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or ""))
    return found


def test_core_imports_nothing_outside_itself_and_no_io() -> None:
    """core/ imports only the standard library (no IO module) and other core modules."""
    for path in (SRC / "core").glob("*.py"):
        if path.name == "docgen.py":  # the command that writes docs/states.md, not a rule
            continue
        for level, module in imports(path):
            if level == 0:
                top = module.split(".")[0]
                assert top not in IO_MODULES and top != "stopline", f"{path.name} imports {module}"
            else:
                assert level == 1, f"{path.name} reaches outside core: {'.' * level}{module}"


def test_core_never_reads_the_clock() -> None:
    """No datetime.now(), utcnow() or today() in core: `now` is always passed in."""
    for path in (SRC / "core").glob("*.py"):
        text = path.read_text()
        for call in (".now(", "utcnow(", ".today("):
            assert call not in text, f"{path.name} reads the clock ({call})"


def test_lower_layers_never_import_the_shells() -> None:
    """core, store, targets and runtime never import cli, http or web."""
    for layer in ("core", "store", "targets", "runtime"):
        for path in (SRC / layer).rglob("*.py"):
            for level, module in imports(path):
                parts = module.split(".")
                shell = parts[1] if level == 0 and parts[0] == "stopline" else parts[0]
                if level == 0 and parts[0] != "stopline":
                    continue
                assert shell not in ("cli", "http", "web"), f"{layer}/{path.name} imports {module}"
