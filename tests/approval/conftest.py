"""Fixtures of the approval catalogue: a real SQLite file, the test app, the CLI, a dump.

Every adversarial case compares :meth:`Env.dump` before and after the refused command: all tables
but ``refusals`` (the audit of refusals lives apart from the state), every row, every column.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from stopline.cli.main import main
from stopline.runtime.automation import App
from stopline.runtime.runner import run

from .apps.refund_app import CONFIG_ENV, LOG_ENV, build_app, read_log

from helpers import dump_url  # isort: skip

APPS = Path(__file__).parent / "apps"
APP_FILE = APPS / "refund_app.py"
RACE_CLI = APPS / "race_cli.py"
STOPLINE = Path(sys.executable).parent / "stopline"
UNDUMPED = frozenset({"refusals"})

Dump = dict[str, list[tuple[Any, ...]]]


def refusal_counts(db: Path) -> dict[tuple[Any, ...], int]:
    """The refusal audit as ``{(item_id, command, actor, reasons): count}``."""
    return {
        (r["item_id"], r["command"], r["actor"], r["reasons"]): int(r["count"])
        for r in refusals(db)
    }


def refusals(db: Path) -> list[dict[str, Any]]:
    """The refusal audit rows (one per item, command, actor and reasons), oldest first."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute("SELECT * FROM refusals ORDER BY rowid")]
    conn.close()
    return rows


@dataclass
class Env:
    """One test's database file, app log and command line."""

    tmp: Path
    capsys: pytest.CaptureFixture[str]
    app: App | None = None
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def db(self) -> Path:
        return self.tmp / "stopline.db"

    @property
    def url(self) -> str:
        return f"sqlite:///{self.db}"

    @property
    def log(self) -> Path:
        return self.tmp / "hooks.jsonl"

    # --- the app --------------------------------------------------------------------------

    def setup(self, **config: Any) -> dict[str, dict[str, Any]]:
        """Build the test app with ``config``, run it until nothing is due; items by key."""
        self.config = config
        self.app = build_app(self.log, **config)
        self.work()
        items = self.cli_ok("items")["items"]
        return {i["key"]: i for i in items}

    def work(self) -> None:
        """``stopline run APP --once``, in process."""
        assert self.app is not None
        run(self.app, self.url, once=True, linger=0)

    def work_cli(self) -> subprocess.CompletedProcess[str]:
        """``stopline run tests/approval/apps/refund_app.py:app --once`` in a new process."""
        env = {
            **os.environ,
            LOG_ENV: str(self.log),
            CONFIG_ENV: json.dumps(self.config),
        }
        done = self.sub("run", f"{APP_FILE}:app", "--once", "--linger", "0", env=env)
        assert done.returncode == 0, done.stderr
        return done

    def hooks(self, hook: str) -> list[dict[str, Any]]:
        return [e for e in read_log(self.log) if e["hook"] == hook]

    def executions(self) -> list[dict[str, Any]]:
        return self.hooks("execute")

    # --- the command line ---------------------------------------------------------------------

    def cli(self, *args: str, as_json: bool = True) -> tuple[int, Any]:
        """``stopline ARGS --db URL --json`` in process: exit status and parsed output."""
        self.capsys.readouterr()
        argv = [*args, "--db", self.url, *(["--json"] if as_json else [])]
        code = main(argv)
        out = self.capsys.readouterr().out
        return code, json.loads(out) if as_json and out.strip() else out

    def cli_ok(self, *args: str) -> Any:
        code, doc = self.cli(*args)
        assert code == 0, doc
        return doc

    def sub(
        self, *args: str, env: dict[str, str] | None = None, db: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """The real ``stopline`` program in a new process."""
        argv = [str(STOPLINE), *args, *(["--db", self.url, "--json"] if db else [])]
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=120, env=env, check=False
        )

    def show(self, ref: str) -> dict[str, Any]:
        doc: dict[str, Any] = self.cli_ok("show", ref)
        return doc

    def digest(self, ref: str) -> str:
        proposal = self.show(ref)["proposal"]
        assert proposal is not None
        return str(proposal["digest"])

    def history(self, ref: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.cli_ok("history", ref)["events"]
        return events

    def dump(self) -> Dump:
        """Every table but ``refusals``; ``sqlite_sequence`` without the refusal ids' counter."""
        return dump_url(self.url, without=UNDUMPED, sequences=True)

    def refusals(self) -> list[dict[str, Any]]:
        return refusals(self.db)

    def refusal_total(self) -> int:
        """How many refusals the audit counts."""
        return sum(refusal_counts(self.db).values())

    # --- the assertion every adversarial case ends with ------------------------------------------

    def refused(self, args: Sequence[str], reasons: Sequence[str]) -> dict[str, Any]:
        """Run ``args``; assert exit 3, ``refused`` with exactly ``reasons``, zero writes."""
        before, audit, ran = self.dump(), refusal_counts(self.db), len(self.executions())
        code, doc = self.cli(*args)
        assert (code, doc["decision"]) == (3, "refused"), doc
        assert sorted(doc["reasons"]) == sorted(reasons), doc
        assert len(set(doc["reasons"])) == len(doc["reasons"]), doc
        assert doc["sequence"] is None
        assert self.dump() == before, "a refused command wrote to the database"
        after = refusal_counts(self.db)
        counted = {k: n - audit.get(k, 0) for k, n in after.items() if n != audit.get(k, 0)}
        assert list(counted.values()) == [1], "a refusal is counted exactly once in the audit"
        (key,) = counted
        assert sorted(json.loads(key[3])) == sorted(reasons)
        assert len(self.executions()) == ran, "a refused command executed an action"
        return dict(doc)


@pytest.fixture
def env(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Env:
    return Env(tmp_path, capsys)
