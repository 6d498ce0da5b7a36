"""The kit of the signed-mode tests: a database of either kind, a trust root and people's keys
on disk, real ``stopline`` processes for the workers and the command line, and the pay app's
record of what it executed and delivered."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from stopline.controller import Controller, utcnow
from stopline.core.records import Item
from stopline.store import Store, open_store, raw
from stopline.trust import admin
from stopline.trust.authority import Trust
from stopline.trust.keys import KeySigner

from .apps.pay import APP, APPROVALS_ENV, KEYS_ENV, LOG_ENV, OUT_ENV, executed

CLI = [sys.executable, "-m", "stopline.cli.main"]
PEOPLE: dict[str, tuple[str, ...]] = {
    "alice": ("approver", "operator"),
    "bob": ("approver", "operator"),
    "carol": ("operator",),
    "dana": ("viewer",),
}
UNCERTIFIED = ("mallory", "fake-root", "server")  # keys not certified at the start


def clean_environ() -> dict[str, str]:
    """This process's environment without any stopline or ssh-agent setting."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("STOPLINE_") and k not in ("SSH_AUTH_SOCK", "SSH_AGENT_PID")
    }


@dataclass
class SignedLab:
    """One test's database, keys, pay-app log and target folder."""

    root: Path
    url: str
    approvals: int = 2
    item_keys: tuple[str, ...] = ("k1",)
    keys: dict[str, KeySigner] = field(default_factory=dict)

    def __post_init__(self) -> None:
        (self.root / "keys").mkdir(mode=0o700)
        for name in ("root", *PEOPLE, *UNCERTIFIED):
            signer = KeySigner.generate()
            signer.save(self.key_path(name), f"test-{name}")
            self.keys[name] = signer

    # --- keys -----------------------------------------------------------------------------

    def key_path(self, name: str) -> Path:
        return self.root / "keys" / name

    @property
    def trust(self) -> Trust:
        return Trust((self.keys["root"].public_key,))

    def certify_people(self) -> None:
        with self.store() as store:
            now = utcnow()
            for name, roles in PEOPLE.items():
                admin.certify(
                    store, self.keys["root"], name, self.keys[name].public_key, roles=roles, now=now
                )

    # --- processes --------------------------------------------------------------------------

    @property
    def log(self) -> Path:
        return self.root / "executed.jsonl"

    @property
    def out(self) -> Path:
        return self.root / "target"

    def env(self, *, signed: bool = True, **extra: str) -> dict[str, str]:
        env = {
            **clean_environ(),
            "STOPLINE_DATABASE_URL": self.url,
            LOG_ENV: str(self.log),
            OUT_ENV: str(self.out),
            KEYS_ENV: ",".join(self.item_keys),
            APPROVALS_ENV: str(self.approvals),
            # signed mode is the host's configuration; "" is a host in unsigned mode
            "STOPLINE_TRUST_ROOT": self.keys["root"].public_key.line if signed else "",
        }
        return {**env, **extra}

    def cli(
        self,
        *args: str,
        signed: bool = True,
        ok: tuple[int, ...] = (0,),
        env: dict[str, str] | None = None,
        timeout: float = 180,
    ) -> subprocess.CompletedProcess[str]:
        """One ``stopline`` process, run to its end; fails unless its status is in ``ok``."""
        done = subprocess.run(
            [*CLI, *args],
            env={**self.env(signed=signed), **(env or {})},
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if ok and done.returncode not in ok:
            pytest.fail(
                f"stopline {' '.join(args)} exited {done.returncode}\n"
                f"stdout: {done.stdout}\nstderr: {done.stderr[-6000:]}",
                pytrace=False,
            )
        return done

    def cli_json(self, *args: str, **options: Any) -> Any:
        return json.loads(self.cli(*args, "--json", **options).stdout)

    def work(
        self, *extra: str, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The workers, as a real ``stopline run --once`` process in signed mode."""
        return self.cli("run", APP, "--once", "--linger", "0.2", *extra, ok=ok, env=env)

    def verify(self, *extra: str, signed: bool = True) -> Any:
        return self.cli_json("verify", *extra, signed=signed, ok=(0, 3))

    # --- in this process ----------------------------------------------------------------------

    @contextmanager
    def store(self) -> Iterator[Store]:
        opened = open_store(self.url)
        try:
            yield opened
        finally:
            opened.close()

    def controller(self, store: Store, signer: str | None = None) -> Controller:
        """A host in signed mode (this lab's trust root), signing with ``signer``'s key."""
        return Controller(
            store, trust=self.trust, signer=self.keys[signer] if signer is not None else None
        )

    def item(self, key: str = "k1") -> Item:
        with self.store() as store:
            found = store.find("pay", key)
        assert found is not None, key
        return found

    def digest(self, key: str = "k1") -> str:
        return str(self.item(key).doc("proposal")["digest"])

    def executed(self) -> list[dict[str, Any]]:
        return executed(self.log)

    def remote_objects(self) -> list[str]:
        if not self.out.exists():
            return []
        return sorted(p.name for p in self.out.iterdir())  # one folder per remote object


def findings_about(report: Any, ref: str) -> list[dict[str, str]]:
    """The findings of a ``verify --json`` report (and its recorded incidents) naming ``ref``."""
    found = [f for f in report["findings"] if f["ref"] == ref]
    for incident in report["incidents"]:
        if incident["item"] == ref:
            found += incident["findings"]
    return found


def execute_sql(store: Store, sql: str, params: dict[str, Any] | None = None) -> None:
    """Run one statement around the store's own methods, as a database writer could
    (``:name`` parameters, written the PostgreSQL way there)."""
    if store.dialect == "postgres":
        sql = re.sub(r":(\w+)", r"%(\1)s", sql)
    with raw.writing(store) as cur:
        cur.execute(sql, params or {})


def store_time(store: Store, at: datetime) -> Any:
    """A time as the store writes it into a column."""
    return raw.time_value(store, at)
