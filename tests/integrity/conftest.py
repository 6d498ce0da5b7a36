"""Fixtures of the integrity suite: the vault database built once per store and per test
session, and a fresh copy of it for every test. (The tamper catalogue's summary table is
printed by the hooks in ``tests/conftest.py``: they must run in the ``pytest -n`` controller,
which never loads this file.)"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .lab import Base, Vault, build_base

STORE_KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(scope="session", params=STORE_KINDS)
def vault_base(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Base]:
    """The vault database, built by real commands once per store."""
    kind = request.param
    root = tmp_path_factory.mktemp(f"vault-{kind}")
    made: list[str] = []
    if kind == "sqlite":
        url = f"sqlite:///{root / 'stopline.db'}"

        def copier(dest: Path) -> str:
            shutil.copyfile(root / "stopline.db", dest / "stopline.db")
            return f"sqlite:///{dest / 'stopline.db'}"

        def drop() -> None:
            """The SQLite files go with the temporary folder."""
    else:
        server = request.getfixturevalue("postgres_server")
        base_name = server.create()
        url = server.url_for(base_name)

        def copier(dest: Path) -> str:
            name = server._name("t")
            server.admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{base_name}"')
            made.append(name)
            return str(server.url_for(name))

        def drop() -> None:
            for name in [*made, base_name]:
                server.discard(name)

    vault = Vault(root, url)
    try:
        tokens, backups = build_base(vault)
        yield Base(kind, vault, copier, tokens, backups)
    finally:
        vault.cleanup()
        drop()


@pytest.fixture
def vault_copy(vault_base: Base, tmp_path: Path) -> Iterator[Callable[[str], Vault]]:
    """``vault_copy(name)``: a fresh copy of the vault database in its own folder."""
    made: list[Vault] = []

    def make(name: str) -> Vault:
        copy = vault_base.copy(tmp_path / name)
        made.append(copy)
        return copy

    yield make
    for copy in made:
        copy.cleanup()
