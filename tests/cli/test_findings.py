"""The ten findings of a new user (issue 17), each through a real ``stopline`` process.

Each test failed on the code before the fix and passes now. This module imports nothing from
``stopline`` at module level, so it runs against any version on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "stopline.cli.main"]


def stopline(
    *args: str, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPLINE_")}
    if cwd is not None:
        env["STOPLINE_DEMO_DRAFTS"] = str(cwd / "drafts")
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout
    )


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(done.stdout)


@pytest.fixture
def demo(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    done = stopline("demo", "--db", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return url


def write_app(folder: Path, name: str, body: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return path


# --- 1. a typo in --db is not an empty inbox --------------------------------------------------


def test_1_a_read_command_never_creates_a_database(tmp_path: Path) -> None:
    """`items` on a URL with no database exits 2, says how to create one, creates nothing."""
    url = f"sqlite:///{tmp_path}/nonexistent/dir/x.db"
    done = stopline("items", "--db", url, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no stopline database" in done.stderr and "stopline migrate" in done.stderr
    assert "no items" not in done.stdout
    assert not (tmp_path / "nonexistent").exists()


# --- 2. a wrong PostgreSQL URL fails fast, in one line ----------------------------------------


def test_2_an_unreachable_postgres_fails_fast_in_one_line(tmp_path: Path) -> None:
    """A port nobody listens on: exit 2 on the first refused connection (the driver's own
    reason in one line, no driver warnings), not after waiting out a pool's timeout as the old
    code did (judged by what it says, never by a wall clock a loaded machine can stretch)."""
    done = stopline("items", "--db", "postgresql://postgres@127.0.0.1:1/nothing", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot connect" in lines[0], done.stderr
    assert "Connection refused" in lines[0], done.stderr
    assert "WARNING" not in done.stderr and "PoolTimeout" not in done.stderr
    assert "timeout" not in done.stderr.lower()


# --- 3. a failed discovery, an async hook: cron must notice -----------------------------------


def test_3_a_discovery_that_raises_makes_run_exit_non_zero(tmp_path: Path) -> None:
    """`run --once` exits 4 and names the failed discovery, instead of 0 with 0 transitions."""
    write_app(
        tmp_path,
        "broken",
        """
        from stopline import App, Automation, Evidence, NeedsEyes

        def discover(ctx):
            raise RuntimeError("inventory API down")

        app = App([Automation("broken", discover, lambda c: Evidence({}), lambda c: NeedsEyes("x"))])
        """,
    )
    url = f"sqlite:///{tmp_path / 'b.db'}"
    done = stopline("run", "broken:app", "--once", "--linger", "0", "--db", url, cwd=tmp_path)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "discovery of broken raised RuntimeError: inventory API down" in done.stdout


def test_3_a_discovery_that_never_returns_makes_run_exit_non_zero(tmp_path: Path) -> None:
    """A discovery past its `hook_timeout` is abandoned: `run --once` ends, exits 4 and names
    it (before, it had no time limit and `run` waited for it as long as it held on)."""
    write_app(
        tmp_path,
        "stuck",
        """
        import threading
        from stopline import App, Automation, Evidence, NeedsEyes

        def discover(ctx):
            threading.Event().wait(600)
            return ["never"]

        app = App([Automation("stuck", discover, lambda c: Evidence({}), lambda c: NeedsEyes("x"),
                              hook_timeout=0.5)])
        """,
    )
    url = f"sqlite:///{tmp_path / 's.db'}"
    done = stopline("run", "stuck:app", "--once", "--linger", "0", "--db", url, cwd=tmp_path)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "discovery of stuck ran past its hook_timeout of 0.5 s" in done.stdout


def test_3_an_async_generator_hook_is_refused_when_the_app_loads(tmp_path: Path) -> None:
    """An `async def` hook that yields (a generator, not one outcome) is exit 2 at load time,
    naming the hook; nothing runs."""
    write_app(
        tmp_path,
        "asyncapp",
        """
        from stopline import App, Automation, Evidence, NeedsEyes

        async def observe(ctx):
            yield Evidence({})

        app = App([Automation("a", lambda c: ["k"], observe, lambda c: NeedsEyes("x"))])
        """,
    )
    url = f"sqlite:///{tmp_path / 'a.db'}"
    done = stopline("run", "asyncapp:app", "--once", "--linger", "0", "--db", url, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "observe hook" in done.stderr and "async generator" in done.stderr


def test_3_async_hooks_run_like_plain_ones(tmp_path: Path) -> None:
    """`async def` hooks (discovery as an async generator) run on the worker's event loop and
    their outcomes are recorded as a plain hook's would be."""
    write_app(
        tmp_path,
        "asyncapp",
        """
        import asyncio
        from stopline import App, Automation, Evidence, ReportForReview

        async def discover(ctx):
            for key in ("a", "b"):
                yield key

        async def observe(ctx):
            await asyncio.sleep(0.01)
            return Evidence({"key": ctx.item.key})

        async def propose(ctx):
            return ReportForReview({"seen": ctx.evidence["key"]})

        app = App([Automation("a", discover, observe, propose)])
        """,
    )
    url = f"sqlite:///{tmp_path / 'a.db'}"
    done = stopline(
        "run", "asyncapp:app", "--once", "--linger", "0", "--json", "--db", url, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["states"] == {"ready_for_review": 2}


# --- 4. refusals name the case, not only the code ---------------------------------------------


def test_4_a_refusal_names_the_roles_needed_and_who_holds_them(demo: str, tmp_path: Path) -> None:
    """actor_not_authorized says which roles approve and who holds them."""
    digest = as_json(stopline("show", "service-health/checkout-api", "--json", "--db", demo))[
        "proposal"
    ]["digest"]
    done = stopline(
        "approve",
        "service-health/checkout-api",
        "--proposal",
        digest,
        "--actor",
        "dana",
        "--db",
        demo,
    )
    assert done.returncode == 3
    assert "actor_not_authorized" in done.stdout
    assert (
        "approver" in done.stdout
        and "alice and bob" in done.stdout
        and "dana holds viewer" in done.stdout
    )


def test_4_an_unknown_item_says_there_is_none(demo: str) -> None:
    """An unknown id reads "no item ...", never "is None"."""
    done = stopline("close", "itm_nope", "--actor", "carol", "--reason", "x", "--db", demo)
    assert done.returncode == 3
    assert "no item itm_nope" in done.stdout and "None" not in done.stdout


def test_4_self_approval_names_the_editor_and_an_unsatisfiable_approval_is_flagged(
    demo: str,
) -> None:
    """After alice edits a two-approver proposal she may not approve: the refusal says she
    edited it, and show and items say it can never be approved (one eligible approver left)."""
    ref = "service-health/checkout-api"
    edit = stopline(
        "edit", ref, "--actor", "alice", "--params", '{"service": "checkout-api"}', "--db", demo
    )
    assert edit.returncode == 0, edit.stdout + edit.stderr
    digest = as_json(stopline("show", ref, "--json", "--db", demo))["proposal"]["digest"]
    done = stopline("approve", ref, "--proposal", digest, "--actor", "alice", "--db", demo)
    assert done.returncode == 3 and "self_approval" in done.stdout
    assert "alice edited it" in done.stdout
    assert "can never be approved" in done.stdout
    show = stopline("show", ref, "--db", demo)
    assert "CANNOT BE APPROVED" in show.stdout and "may still approve: bob" in show.stdout
    rows = as_json(stopline("items", "--json", "--db", demo))["items"]
    row = next(r for r in rows if r["key"] == "checkout-api")
    assert row["approvable"] is False


# --- 5. a changed proposal is shown, never rubber-stamped; digest prefixes --------------------


def test_5_a_stale_digest_shows_what_changed_and_offers_no_approval(demo: str) -> None:
    """Approving the digest an edit replaced is refused with a field-by-field diff, and the
    output offers no `approve` of the new digest."""
    ref = "service-health/checkout-api"
    old = as_json(stopline("show", ref, "--json", "--db", demo))["proposal"]["digest"]
    params = '{"service": "checkout-api", "strategy": "all-at-once"}'
    assert (
        stopline("edit", ref, "--actor", "carol", "--params", params, "--db", demo).returncode == 0
    )
    done = stopline("approve", ref, "--proposal", old, "--actor", "bob", "--db", demo)
    assert done.returncode == 3 and "proposal_digest_mismatch" in done.stdout
    assert "params.strategy: 'rolling' -> 'all-at-once'" in done.stdout
    assert "edited by carol" in done.stdout
    assert "stopline approve" not in done.stdout
    doc = as_json(
        stopline("approve", ref, "--proposal", old, "--actor", "bob", "--json", "--db", demo)
    )
    assert doc["reasons"] == ["proposal_digest_mismatch"]
    assert {"field": "params.strategy", "before": "rolling", "after": "all-at-once"} in doc[
        "details"
    ]["diff"]


def test_5_a_digest_prefix_of_twelve_characters_is_accepted(demo: str) -> None:
    """A 12-character prefix of the current digest approves; 8 characters is exit 2."""
    ref = "service-health/checkout-api"
    digest = as_json(stopline("show", ref, "--json", "--db", demo))["proposal"]["digest"]
    short = stopline("approve", ref, "--proposal", digest[:8], "--actor", "bob", "--db", demo)
    assert short.returncode == 2 and "at least 12" in short.stderr
    done = stopline("approve", ref, "--proposal", digest[:12], "--actor", "bob", "--db", demo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "applied" in done.stdout


# --- 6. show for a person ---------------------------------------------------------------------


def test_6_show_has_the_rationale_and_nothing_that_does_not_apply(demo: str) -> None:
    """show prints the rationale; a stopped item has no "next eligible"; no "None" values."""
    show = stopline("show", "service-health/checkout-api", "--db", demo)
    assert "rationale: error rate" in show.stdout
    assert "next eligible" not in show.stdout and "None" not in show.stdout
    exhausted = stopline("show", "service-health/billing-api", "--db", demo)
    assert "last evidence None" not in exhausted.stdout and "None" not in exhausted.stdout
    assert "3 of 3 attempts spent" in exhausted.stdout


# --- 7. the demo tells the truth on an existing database ---------------------------------------


def test_7_the_demo_run_twice_reports_what_it_finds(demo: str, tmp_path: Path) -> None:
    """A second demo on the same file claims no approval it did not make."""
    before = as_json(stopline("show", "service-health/checkout-api", "--json", "--db", demo))
    done = stopline("demo", "--db", demo, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "alice approved first" not in done.stdout and "1 of 2" not in done.stdout
    assert "holds items already" in done.stdout
    after = as_json(stopline("show", "service-health/checkout-api", "--json", "--db", demo))
    assert after["proposal"]["approvals"] == before["proposal"]["approvals"]


def test_7_the_demo_with_other_actors_does_not_claim_their_approvals(tmp_path: Path) -> None:
    """When alice exists as a viewer the demo says so and prints no "1 of 2"; the item is at
    0 of 2, as the output says."""
    url = f"sqlite:///{tmp_path / 'd.db'}"
    assert stopline("actors", "add", "alice", "--role", "viewer", "--db", url).returncode == 0
    done = stopline("demo", "--db", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 of 2" not in done.stdout and "alice approved first" not in done.stdout
    assert "actor alice exists with roles viewer" in done.stdout
    item = as_json(stopline("show", "service-health/checkout-api", "--json", "--db", url))
    assert item["proposal"]["approvals"] == []


# --- 8. recurring checks: nothing to do, keys by period ---------------------------------------


def test_8_nothing_to_do_completes_with_its_evidence_and_no_approval(tmp_path: Path) -> None:
    """A propose hook returning NothingToDo completes the item: no proposal, no approval,
    no delivery, and its key comes from period_key."""
    write_app(
        tmp_path,
        "certs",
        """
        from stopline import App, Automation, Evidence, NothingToDo, period_key

        def discover(ctx):
            return [period_key(ctx.now, "day", subject="db-1")]

        app = App([Automation("certs", discover, lambda c: Evidence({"days_left": 90}),
                              lambda c: NothingToDo("certificate valid for 90 days"))])
        """,
    )
    url = f"sqlite:///{tmp_path / 'c.db'}"
    run = stopline("run", "certs:app", "--once", "--linger", "0", "--db", url, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    [row] = as_json(stopline("items", "--json", "--db", url))["items"]
    assert re.fullmatch(r"db-1@\d{4}-\d{2}-\d{2}", row["key"])
    assert row["state"] == "completed" and row["proposal_digest"] is None
    assert row["why"] == "nothing to do: certificate valid for 90 days"
    item = as_json(stopline("show", row["id"], "--json", "--db", url))
    assert item["evidence"]["data"] == {"days_left": 90} and item["artifacts"] == []


# --- 9. everything a user needs is documented in the repository -------------------------------


NAMES = (
    "Discovered",
    "Controller",
    "ctx.rejection",
    "ctx.corrective_input",
    "NothingToDo",
    "period_key",
    "STOPLINE_LOG",
    "STOPLINE_SECRET",
    "STOPLINE_TRUST_PROXY_HEADER",
    "STOPLINE_READ_ONLY",
    "STOPLINE_OVERDUE_AFTER",
    "STOPLINE_APP",
    "STOPLINE_COOKIE_SECURE",
)


def test_9_the_docs_name_every_hook_api_and_variable_and_no_outside_file() -> None:
    """docs/ names each API and variable a user needed source for; no doc names the contract
    file that is not in the repository."""
    docs = "\n".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))
    missing = [name for name in NAMES if name not in docs]
    assert not missing, f"not documented: {missing}"
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    texts += sorted((ROOT / "src").rglob("*.py"))
    assert not [p for p in texts if "CONTRACT" + ".md" in p.read_text()]


# --- 10. run module:app from the current folder, --version, progress ---------------------------


def test_10_run_finds_a_module_in_the_current_folder(tmp_path: Path) -> None:
    """`stopline run certs_app:app` imports ./certs_app.py, as `python -m` would."""
    write_app(
        tmp_path,
        "certs_app",
        """
        from stopline import App, Automation, Evidence, ReportForReview

        app = App([Automation("c", lambda c: ["k"], lambda c: Evidence({}),
                              lambda c: ReportForReview({"summary": "ok"}))])
        """,
    )
    url = f"sqlite:///{tmp_path / 'r.db'}"
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("stopline")),
            "run",
            "certs_app:app",
            "--once",
            "--linger",
            "0",
            "--db",
            url,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "items now:" in done.stdout and "ready_for_review 1" in done.stdout


def test_10_version() -> None:
    """`stopline --version` prints the version."""
    done = subprocess.run([*CLI, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and re.fullmatch(r"stopline \d+\.\d+\.\d+\n", done.stdout)


def test_10_run_shows_progress_on_a_terminal_before_it_exits(tmp_path: Path) -> None:
    """On a terminal, `run` draws a progress line while a hook is still running (the hook
    waits until the test has seen it), then prints its summary."""
    gate = tmp_path / "go"
    write_app(
        tmp_path,
        "slow",
        f"""
        import time
        from pathlib import Path
        from stopline import App, Automation, Evidence, ReportForReview

        def propose(ctx):
            deadline = time.monotonic() + 60
            while not Path({str(gate)!r}).exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            return ReportForReview({{"summary": "done"}})

        app = App([Automation("slow", lambda c: ["a", "b"], lambda c: Evidence({{}}), propose)])
        """,
    )
    url = f"sqlite:///{tmp_path / 's.db'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPLINE_")}
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [*CLI, "run", "slow:app", "--once", "--linger", "0", "--db", url],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
    )
    os.close(secondary)
    seen = b""
    deadline = time.monotonic() + 90
    try:
        while b"transitions; items:" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(primary, 4096)
                except OSError:
                    break
        assert b"transitions; items:" in seen, seen.decode(errors="replace")
        gate.touch()
        while proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(primary, 4096)
                except OSError:
                    break
        assert proc.wait(timeout=60) == 0, seen.decode(errors="replace")
        while True:  # what is left after the exit
            ready, _, _ = select.select([primary], [], [], 0.2)
            if not ready:
                break
            try:
                chunk = os.read(primary, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        gate.touch()
        if proc.poll() is None:
            proc.kill()
        os.close(primary)
    assert b"items now:" in seen and b"ready_for_review 2" in seen, seen.decode(errors="replace")
