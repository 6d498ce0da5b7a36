"""The layers of docs/architecture.md are checked, not hoped for."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from stopline.store.queries import load

SRC = Path(__file__).resolve().parents[1] / "src" / "stopline"
TESTS = Path(__file__).resolve().parent
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


def core_violations(root: Path) -> list[str]:
    """core/ imports only the standard library (no IO module) and other core modules."""
    found = []
    for path in sorted((root / "core").glob("*.py")):
        if path.name == "docgen.py":  # the command that writes docs/states.md, not a rule
            continue
        for level, module in imports(path):
            if level == 0 and module.split(".")[0] in IO_MODULES | {"stopline"}:
                found.append(f"core/{path.name} imports {module}")
            elif level > 1:
                found.append(f"core/{path.name} reaches outside core: {'.' * level}{module}")
    return found


def test_core_imports_nothing_outside_itself_and_no_io() -> None:
    assert core_violations(SRC) == []


def test_core_never_reads_the_clock() -> None:
    """No datetime.now(), utcnow() or today() in core: `now` is always passed in."""
    for path in (SRC / "core").glob("*.py"):
        text = path.read_text()
        for call in (".now(", "utcnow(", ".today("):
            assert call not in text, f"{path.name} reads the clock ({call})"


SHELLS = ("cli", "http", "web", "server")
# The server's modules that assemble and run both shells; every other server module is shared
# by them and imports neither.
ASSEMBLY = {"server/app.py", "server/run.py"}


def imported(root: Path, path: Path) -> Iterator[str]:
    """The absolute name of every module ``path`` imports (``stopline.…`` inside the tree
    ``root``); ``from package import module`` names the module."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _module_of(node.level, node.module or "", path, root)
            yield base
            for alias in node.names:
                inner = root.parent.joinpath(*f"{base}.{alias.name}".split("."))
                if inner.with_suffix(".py").is_file() or inner.is_dir():
                    yield f"{base}.{alias.name}"


def layer_of(name: str) -> str | None:
    """``http`` for ``stopline.http.api``; None for a module outside stopline."""
    parts = name.split(".")
    return parts[1] if parts[0] == "stopline" and len(parts) > 1 else None


def modules(root: Path, *layers: str) -> Iterator[tuple[str, Path]]:
    """(``layer/module.py``, path) of every module of ``layers``."""
    for layer in layers:
        for path in sorted((root / layer).rglob("*.py")):
            yield str(path.relative_to(root)), path


def shell_violations(root: Path) -> list[str]:
    """No lower layer (core, store, targets, runtime) imports a shell; the runtime imports
    neither the controller nor the command table; ``http`` and ``web`` never import each other,
    and the server's shared modules import neither (only its assembly does); a shell reaches
    the store only through its public door, the ``stopline.store`` package."""
    found = []
    for name, path in modules(root, "core", "store", "targets", "runtime"):
        above = SHELLS + (("controller", "commands") if name.startswith("runtime/") else ())
        found += [f"{name} imports {m}" for m in imported(root, path) if layer_of(m) in above]
    for name, path in modules(root, *SHELLS):
        layer = name.split("/")[0]
        other = {"http": {"web"}, "web": {"http"}}.get(layer, set())
        if layer == "server" and name not in ASSEMBLY:
            other = {"http", "web"}
        for module in imported(root, path):
            if layer_of(module) in other:
                found.append(f"{name} imports {module}")
            if layer_of(module) == "store" and module != "stopline.store":
                found.append(f"{name} imports {module}, not the public stopline.store")
    return found


def test_the_layers_import_only_downwards_and_the_shells_not_each_other() -> None:
    assert shell_violations(SRC) == []


def test_the_layer_rules_find_a_violation(tmp_path: Path) -> None:
    """The rules above fail on a tree that breaks them (and only where it does)."""
    root = tmp_path / "stopline"
    files = {
        "core/states.py": "from . import names\n",
        "core/names.py": "import unicodedata\n",
        "core/clock.py": "import time\n",
        "core/upward.py": "from ..store import Store\n",
        "store/__init__.py": "from .sqlite import sqlite_path\n",
        "store/sqlite.py": "import sqlite3\n",
        "runtime/worker.py": "from ..commands.table import exposed\nfrom .. import web\n",
        "http/__init__.py": "",
        "http/api.py": "from ..store import Store\nfrom ..server.state import Shared\n",
        "http/crossing.py": "from ..web import page\n",
        "web/__init__.py": "",
        "web/page.py": "from stopline.http.api import routes\n",
        "server/__init__.py": "",
        "server/state.py": "from ..web.page import ENV\n",
        "server/app.py": "from ..http.api import routes\nfrom ..web import page\n",
        "cli/demo.py": "from ..store.sqlite import sqlite_path\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert core_violations(root) == [
        "core/clock.py imports time",
        "core/upward.py reaches outside core: ..store",
    ]
    assert shell_violations(root) == [
        "runtime/worker.py imports stopline.commands.table",
        "runtime/worker.py imports stopline.web",
        "cli/demo.py imports stopline.store.sqlite, not the public stopline.store",
        "http/crossing.py imports stopline.web",
        "http/crossing.py imports stopline.web.page",
        "web/page.py imports stopline.http.api",
        "server/state.py imports stopline.web.page",
    ]


# A statement in a string: SELECT .. FROM, INSERT INTO, UPDATE .. SET x =, DELETE FROM.
SQL = re.compile(
    r"\bselect\s[^;]*?\sfrom\s+\w|\binsert\s+into\s+\w|\bupdate\s+\w+\s+set\s+\w+\s*="
    r"|\bdelete\s+from\s+\w|\bselect\s+(?:1\b|pg_\w+\(|set_config\()",
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
    """Every named query of both stores, as the store loads them (not the fragments other
    queries take in with ``{{name}}``, such as a list of conditions)."""
    sql_dir = resources.files("stopline.store").joinpath("sql")
    files = {"queries"} | {
        e.name.removesuffix(".sql") for e in sql_dir.joinpath("common").iterdir()
    }
    texts = [f.read_text() for d in sql_dir.iterdir() if d.is_dir() for f in d.iterdir()]
    fragments = {m for text in texts for m in re.findall(r"\{\{(\w+)\}\}", text)}
    return [
        sql
        for dialect in ("sqlite", "postgres")
        for name in sorted(files)
        for query, sql in load(dialect, False, name).items()
        if query not in fragments
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


def store_private_members() -> set[str]:
    """Every ``_name`` the store's classes define or set on ``self``."""
    found = set()
    for path in (SRC / "store").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            name = ""
            if isinstance(node, ast.FunctionDef):
                name = node.name
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                name = node.attr if node.value.id == "self" else ""
            if name.startswith("_") and not name.startswith("__"):
                found.add(name)
    return found


def test_no_module_outside_the_store_uses_its_raw_access_and_no_test_its_private_members() -> None:
    """``stopline.store.raw`` (direct table access) is for tests only; tests in turn use it,
    or the public ports, and never a store's private members."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if not path.is_relative_to(SRC / "store"):
            found += [f"{path.name} imports {m}" for m in imported(SRC, path) if "store.raw" in m]
    private = store_private_members()
    assert {"_read", "_write", "_item_params", "_listen_conn"} <= private
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            on_self = isinstance(node, ast.Attribute) and ast.unparse(node.value) == "self"
            if isinstance(node, ast.Attribute) and node.attr in private and not on_self:
                found.append(f"{path.relative_to(TESTS)}:{node.lineno} uses .{node.attr}")
    assert found == []


def _module_of(level: int, module: str, path: Path, root: Path = SRC) -> str:
    """The absolute ``stopline.…`` name of an import written in ``path``."""
    if level == 0:
        return module
    package = path.parent.relative_to(root.parent).parts
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, module] if module else base)


def test_the_command_layer_never_imports_a_shell() -> None:
    """commands/ (the table between the core and the shells) imports no cli, http or web."""
    for path in (SRC / "commands").rglob("*.py"):
        for level, module in imports(path):
            name = _module_of(level, module, path)
            assert name.split(".")[:2] not in [["stopline", shell] for shell in SHELLS], (
                f"commands/{path.name} imports {name}"
            )


def test_the_shells_build_core_commands_only_through_the_command_table() -> None:
    """No module of cli/, http/, web/ or server/ imports core.commands: every people's command a
    shell gives is built by its table entry."""
    for shell in SHELLS:
        for path in (SRC / shell).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = _module_of(node.level, node.module or "", path)
                    names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
                assert "stopline.core.commands" not in names, f"{shell}/{path.name}"


MAX_MODULE_LINES = 400


def test_every_module_is_small() -> None:
    """No module grows past about 400 lines: split it into modules named for what they hold."""
    sizes = {str(p.relative_to(SRC)): len(p.read_text().splitlines()) for p in SRC.rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES} == {}
