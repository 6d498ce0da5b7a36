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


def _module_of(level: int, module: str, path: Path) -> str:
    """The absolute ``stopline.…`` name of an import written in ``path``."""
    if level == 0:
        return module
    package = path.parent.relative_to(SRC.parent).parts
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, module] if module else base)


def test_the_command_layer_never_imports_a_shell() -> None:
    """commands/ (the table between the core and the shells) imports no cli, http or web."""
    for path in (SRC / "commands").rglob("*.py"):
        for level, module in imports(path):
            name = _module_of(level, module, path)
            assert name.split(".")[:2] not in (
                ["stopline", "cli"],
                ["stopline", "http"],
                ["stopline", "web"],
            ), f"commands/{path.name} imports {name}"


def test_the_shells_build_core_commands_only_through_the_command_table() -> None:
    """No module of cli/, http/ or web/ imports core.commands: every people's command a shell
    gives is built by its table entry."""
    for shell in ("cli", "http", "web"):
        for path in (SRC / shell).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = _module_of(node.level, node.module or "", path)
                    names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
                assert "stopline.core.commands" not in names, f"{shell}/{path.name}"
