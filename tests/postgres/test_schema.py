"""Schema versions on PostgreSQL: workers refuse a schema they do not know; two concurrent
``stopline migrate`` processes apply it once, one after the other under the advisory lock."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from proc import wait_for
from stopline.store import SchemaMismatch, open_store
from stopline.store.postgres import MIGRATION_LOCK
from stopline.store.queries import migrations

from .conftest import FLEET_APP, PgLab, query

pytestmark = pytest.mark.postgres

KNOWN = [version for version, _, _ in migrations("postgres")]  # the versions this code knows


def test_a_worker_refuses_to_start_on_a_newer_schema(pg_lab: PgLab) -> None:
    """`stopline run` on a schema from a newer stopline exits 2 with a clear message, no write."""
    future = KNOWN[-1] + 1
    pg_lab.query(
        "INSERT INTO schema_migrations (version, name) VALUES (%s, 'from_the_future')", (future,)
    )
    before = pg_lab.dump()
    for extra in ((), ("--workers", "2")):
        done = pg_lab.cli("run", FLEET_APP, "--once", *extra, env={"STOPLINE_PG_ITEMS": 3}, ok=())
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        assert done.stderr.strip() == (
            f"stopline: database schema is version {future}, this stopline knows {KNOWN[-1]};"
            " upgrade stopline"
        )
    assert pg_lab.dump() == before, "a refused worker wrote to the database"
    assert pg_lab.query("SELECT * FROM automations") == []


def test_a_worker_process_refuses_an_unmigrated_database(blank_postgres_url: str) -> None:
    """A store opened without migrating (as `--workers` children are) refuses schema 0."""
    with pytest.raises(SchemaMismatch, match=r"version 0, .* run `stopline migrate`"):
        open_store(blank_postgres_url, migrate=False)
    tables = query(
        blank_postgres_url,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
    )
    assert tables == [], "checking the schema created tables"


def test_two_migrate_processes_at_once_apply_the_schema_once(
    blank_postgres_url: str, tmp_path: Path
) -> None:
    """Two `stopline migrate` started together on a fresh database: both exit 0, one applies."""
    lab = PgLab(tmp_path, blank_postgres_url)
    try:
        with psycopg.connect(blank_postgres_url, autocommit=True) as holder:
            # Hold the migration lock so that both processes are waiting on it when it frees.
            holder.execute("BEGIN")
            holder.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (MIGRATION_LOCK,))
            procs = [lab.start("migrate", "--json", name=f"migrate{n}") for n in range(2)]
            wait_for(
                lambda: (
                    lab.scalar(
                        "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                    )
                    == 2
                ),
                120,
                "both migrators to wait on the migration lock",
            )
            holder.execute("COMMIT")
        codes = [proc.wait(120) for proc in procs]
        assert codes == [0, 0], [proc.output() for proc in procs]
        docs = [json.loads(proc.out.read_text()) for proc in procs]
        assert sorted(docs[0]["applied"] + docs[1]["applied"]) == KNOWN, "applied twice"
        assert [doc["version"] for doc in docs] == [KNOWN[-1]] * 2
        rows = lab.query("SELECT version FROM schema_migrations ORDER BY version")
        assert [r["version"] for r in rows] == KNOWN
        assert lab.cli_json("verify")["ok"] is True
    finally:
        lab.cleanup()
