"""The layers of docs/architecture.md are checked, not hoped for."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from stopline.store.queries import load

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


def test_the_runtime_imports_no_shell_and_not_the_controller() -> None:
    """runtime/ sits below the command layer: it imports no shell, no command table and not
    the controller (what it needs of the command layer it declares as a protocol)."""
    above = (["stopline", "controller"], ["stopline", "commands"])
    shells = (["stopline", "cli"], ["stopline", "http"], ["stopline", "web"])
    for path in (SRC / "runtime").rglob("*.py"):
        for level, module in imports(path):
            name = _module_of(level, module, path).split(".")[:2]
            assert name not in above + shells, f"runtime/{path.name} imports {'.'.join(name)}"


# A statement in a string: SELECT .. FROM, INSERT INTO, UPDATE .. SET x =, DELETE FROM.
SQL = re.compile(
    r"\bselect\s[^;]*?\sfrom\s+\w|\binsert\s+into\s+\w|\bupdate\s+\w+\s+set\s+\w+\s*="
    r"|\bdelete\s+from\s+\w|\bselect\s+(?:1\b|pg_\w+\()",
    re.IGNORECASE,
)
PRIVATE_STORE = {"_read", "_write", "_raw"}
DRIVERS = {"sqlite3", "psycopg", "psycopg_pool"}


def outside_the_store() -> Iterator[tuple[str, ast.AST]]:
    """(module path, node) of every AST node of every module outside ``store/``."""
    for path in sorted(SRC.rglob("*.py")):
        if path.is_relative_to(SRC / "store"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            yield str(path.relative_to(SRC)), node


def store_statements() -> list[str]:
    """Every named query of both stores, as the store loads them."""
    folder = resources.files("stopline.store").joinpath("sql", "common")
    files = {"queries"} | {e.name.removesuffix(".sql") for e in folder.iterdir()}
    return [
        sql
        for dialect in ("sqlite", "postgres")
        for name in sorted(files)
        for sql in load(dialect, False, name).values()
    ]


def test_the_sql_detector_recognises_every_statement_of_the_store() -> None:
    """The pattern the next test looks for finds each of the store's own statements (it is
    case-insensitive: prose that reads like a statement has to be reworded)."""
    statements = store_statements()
    assert len(statements) > 50
    assert [s for s in statements if not SQL.search(s)] == []


def test_only_the_store_holds_sql_or_opens_a_connection() -> None:
    """Outside store/, no string holds a SQL statement, nothing touches a store's private
    connections (_read, _write, _raw), and no module imports a database driver."""
    found = []
    for module, node in outside_the_store():
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if match := SQL.search(node.value):
                found.append(f"{module}:{node.lineno} SQL {match.group(0)[:40]!r}")
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE_STORE:
            found.append(f"{module}:{node.lineno} uses .{node.attr}")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names.append(node.module or "")
            for name in names:
                if name.split(".")[0] in DRIVERS:
                    found.append(f"{module}:{node.lineno} imports {name}")
    assert found == []


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
