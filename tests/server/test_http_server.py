"""``stopline serve`` refuses what it must refuse, before it listens."""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from stopline.server.run import is_loopback, serve
from stopline.server.settings import Settings, SettingsError, parse_webhooks
from stopline.store import open_store
from webhook_receiver import SECRET

from .httphelp import server_env


def _serve(url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    if url.startswith("sqlite:") and not Path(url.removeprefix("sqlite:///")).exists():
        open_store(url).close()  # serve needs a database that exists (it never creates one)
    return subprocess.run(
        [sys.executable, "-m", "stopline.cli.main", "serve", "--db", url, *args],
        env=server_env(env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_loopback_names() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert is_loopback("127.8.0.1") and is_loopback("[::1]")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.10") and not is_loopback("")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1"])
def test_refuses_beyond_loopback_without_authentication(tmp_path: Path, host: str) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    done = _serve(url, "--host", host, "--port", "1")
    assert done.returncode == 2
    assert f"refusing to listen on {host}" in done.stderr
    assert "STOPLINE_SECRET" in done.stderr


def _with_schema_version(path: Path, version: int) -> str:
    url = f"sqlite:///{path}"
    open_store(url).close()
    con = sqlite3.connect(path)
    con.execute(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 'now')",
        (version,),
    )
    con.commit()
    con.close()
    return url


def test_refuses_a_schema_it_does_not_know(tmp_path: Path) -> None:
    url = _with_schema_version(tmp_path / "future.db", 99)
    done = _serve(url, "--port", "1")
    assert done.returncode == 2
    assert "schema is version 99" in done.stderr
    args = argparse.Namespace(host="127.0.0.1", port=1)
    assert serve(args, url) == 2  # the server's own check, without the CLI's


def test_refuses_an_unmigrated_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    assert serve(argparse.Namespace(host="127.0.0.1", port=1), url) == 2
    assert "schema is version 0" in capsys.readouterr().err


def test_refuses_webhooks_without_a_secret(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    done = _serve(url, "--port", "1", STOPLINE_WEBHOOKS='{"*": ["http://127.0.0.1:9/"]}')
    assert done.returncode == 2 and "STOPLINE_WEBHOOK_SECRET" in done.stderr


def test_settings_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "STOPLINE_READ_ONLY": "1",
            "STOPLINE_TRUST_PROXY_HEADER": "X-Remote-User",
            "STOPLINE_SECRET": "s",
            "STOPLINE_MAX_BODY": "1024",
            "STOPLINE_OVERDUE_AFTER": "60",
            "STOPLINE_APP": "pkg:app",
            "STOPLINE_COOKIE_SECURE": "true",
            "STOPLINE_BASE_URL": "https://inbox.example/",
            "STOPLINE_WEBHOOKS": '{"a": "https://h.example/x"}',
            "STOPLINE_WEBHOOK_SECRET": SECRET,
            "STOPLINE_NOTIFY_INTERVAL": "2",
        }
    )
    assert settings.read_only and settings.cookie_secure
    assert settings.trust_proxy_header == "X-Remote-User"
    assert (settings.max_body, settings.overdue_after, settings.notify_interval) == (
        1024,
        60.0,
        2.0,
    )
    assert settings.base_url == "https://inbox.example"
    assert settings.webhooks == {"a": "https://h.example/x"}
    with pytest.raises(SettingsError, match="STOPLINE_WEBHOOK_SECRET: the key is 3 bytes"):
        Settings.from_env(
            {
                "STOPLINE_WEBHOOKS": '{"a": "https://h.example/x"}',
                "STOPLINE_WEBHOOK_SECRET": "whsec_AAAA",
            }
        )
    assert Settings.from_env({}) == Settings()
    for bad in ({"STOPLINE_MAX_BODY": "lots"}, {"STOPLINE_TRUST_PROXY_HEADER": "X: y"}):
        with pytest.raises(SettingsError):
            Settings.from_env(bad)
    with pytest.raises(SettingsError):
        parse_webhooks('{"a": ["ftp://x"]}')
