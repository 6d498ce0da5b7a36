"""A laboratory app for the reliability tests, configured by environment variables.

Load it as ``stopline run tests/runtime/apps/lab.py:app`` (or ``runner.run(path + ":app")``).
Every hook records its invocation in the ``runs`` table of a separate SQLite file (the "effects
file", ``STOPLINE_TEST_EFFECTS``) and its one side effect in ``effects``, keyed by
``(item_id, step)`` with a counter of writes, so a test can check that an effect was recorded
exactly once. Discovery records each firing in ``discoveries``.

What an item does is chosen by the prefix of its key:

=========  =====================================================================
``done``   evidence, a proposal that needs no approval, delivery -> ``completed``
``flaky``  like ``done``, but the first attempt of ``observe`` fails (retryable)
``review`` evidence, a report -> ``ready_for_review``
``approve`` evidence, a proposal an ``approver`` must approve -> ``awaiting_approval``
``eyes``   ``observe`` cannot decide -> ``exception``
``broken`` ``observe`` always fails with a retryable error -> ``exhausted``
``fatal``  ``observe`` fails with a terminal error -> ``failed``
``revise`` delivers one draft to ``STOPLINE_TEST_DRAFTS``; its revise hook always fails
``deep``   ``observe`` returns evidence nested 600 deep
``nan``    ``observe`` returns evidence holding NaN
``recursive`` ``observe`` recurses until Python raises RecursionError
``memory`` ``observe`` asks for more memory than there is (MemoryError)
``slow``   ``observe`` sleeps ``STOPLINE_TEST_SLOW`` seconds (default 3), then returns evidence
=========  =====================================================================

Environment (all optional except the effects file):

* ``STOPLINE_TEST_KEYS``: keys of automation ``lab``, comma separated; ``name*N`` expands to
  ``name-000`` .. ``name-(N-1)``. ``STOPLINE_TEST_PATIENT_KEYS``: keys of ``patient``, whose
  retry delay is an hour (an item there waits for its next eligible time).
* ``STOPLINE_TEST_LEASE`` (seconds, default 10; ``STOPLINE_TEST_PATIENT_LEASE`` for
  ``patient``, default the same), ``STOPLINE_TEST_HOOK_TIMEOUT`` (seconds, default 300: the
  blocking tests hold a hook longer than the default of 20), ``STOPLINE_TEST_EVERY`` (discovery
  interval, default 3600), ``STOPLINE_TEST_MAX_ATTEMPTS`` (3), ``STOPLINE_TEST_DELAY`` (base delay, 0.05),
  ``STOPLINE_TEST_JITTER`` (0), ``STOPLINE_TEST_RESUME_CAP`` (5).
* ``STOPLINE_TEST_BLOCK_STEP`` (``observe``/``propose``/``execute``), with optional
  ``STOPLINE_TEST_BLOCK_KEY`` (key prefix), ``STOPLINE_TEST_BLOCK_ATTEMPT`` and
  ``STOPLINE_TEST_BLOCK_AT`` (``before`` the effect, the default, or ``after`` it): the hook
  blocks until the file ``STOPLINE_TEST_GATE`` exists (at most two minutes).
* ``STOPLINE_TEST_HOOK_SLEEP``: seconds every hook sleeps (to widen races).
* ``STOPLINE_TEST_PARK_DIR``: every process parks in the first hook it runs, after recording
  the run: it writes the file ``PARK_DIR/<pid>`` and blocks until the gate file exists. A test
  that waits for every process to park knows that each one has started work.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from typing import Any

from stopline.core.artifacts import Artifact
from stopline.core.policy import ApprovalPolicy, ApprovalRule, RetryPolicy
from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import (
    Deliver,
    Evidence,
    NeedsEyes,
    Proposal,
    ReportForReview,
    TerminalError,
    TransientError,
)
from stopline.targets.directory import DirectoryTarget

EFFECTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, automation TEXT, item_id TEXT, key TEXT, step TEXT,
    attempt INTEGER, token INTEGER, pid INTEGER, at REAL, claimed_at TEXT, lease_ends TEXT);
CREATE TABLE IF NOT EXISTS effects (
    item_id TEXT, step TEXT, key TEXT, ikey TEXT, pid INTEGER, at REAL, writes INTEGER,
    PRIMARY KEY (item_id, step));
CREATE TABLE IF NOT EXISTS discoveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT, automation TEXT, pid INTEGER, at REAL, keys TEXT);
"""
GATE_LIMIT = 120.0
_parked = False  # whether this process has parked (see STOPLINE_TEST_PARK_DIR)


def _env(name: str, default: str) -> str:
    return os.environ.get(f"STOPLINE_TEST_{name}", default)


def connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=60, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA busy_timeout=60000")
    return conn


def init_effects(path: str) -> None:
    conn = connect(path)
    try:
        conn.executescript(EFFECTS_SCHEMA)
    finally:
        conn.close()


def _write(sql: str, params: Sequence[Any]) -> None:
    conn = connect(os.environ["STOPLINE_TEST_EFFECTS"])
    try:
        conn.execute(sql, params)
    finally:
        conn.close()


def expand_keys(spec: str) -> list[str]:
    keys: list[str] = []
    for token in (t.strip() for t in spec.split(",")):
        if not token:
            continue
        name, star, count = token.partition("*")
        keys += [f"{name}-{n:03d}" for n in range(int(count))] if star else [name]
    return keys


def kind(key: str) -> str:
    return key.split("-", 1)[0]


# --- recording and blocking ---------------------------------------------------------------


def _record_run(ctx: HookContext, step: str) -> None:
    item = ctx.item
    assert item is not None
    _write(
        "INSERT INTO runs (automation, item_id, key, step, attempt, token, pid, at,"
        " claimed_at, lease_ends) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            ctx.automation,
            item.id,
            item.key,
            step,
            item.attempts,
            item.lease_token,
            os.getpid(),
            time.time(),
            None if item.claimed_at is None else item.claimed_at.isoformat(),
            None if item.lease_expires_at is None else item.lease_expires_at.isoformat(),
        ),
    )


def _record_effect(ctx: HookContext, step: str) -> None:
    item = ctx.item
    assert item is not None
    _write(
        "INSERT INTO effects (item_id, step, key, ikey, pid, at, writes)"
        " VALUES (?, ?, ?, ?, ?, ?, 1)"
        " ON CONFLICT (item_id, step) DO UPDATE SET writes = writes + 1",
        (item.id, step, item.key, ctx.idempotency_key, os.getpid(), time.time()),
    )


def _wait_for_gate() -> None:
    gate = _env("GATE", "")
    deadline = time.monotonic() + GATE_LIMIT
    while not (gate and os.path.exists(gate)) and time.monotonic() < deadline:
        time.sleep(0.02)


def _maybe_park() -> None:
    global _parked
    folder = _env("PARK_DIR", "")
    if not folder or _parked:
        return
    _parked = True
    marker = os.path.join(folder, str(os.getpid()))
    with open(marker + ".tmp", "w") as out:
        out.write("parked")
    os.replace(marker + ".tmp", marker)  # never seen half-written
    _wait_for_gate()


def _maybe_block(ctx: HookContext, step: str, where: str) -> None:
    item = ctx.item
    assert item is not None
    if _env("BLOCK_STEP", "") != step or _env("BLOCK_AT", "before") != where:
        return
    if not item.key.startswith(_env("BLOCK_KEY", "")):
        return
    attempt = _env("BLOCK_ATTEMPT", "")
    if attempt and int(attempt) != item.attempts:
        return
    _wait_for_gate()


def _step(ctx: HookContext, step: str, outcome: Any) -> Any:
    """Record the run, block if asked, fail or record the effect, then return ``outcome``."""
    _record_run(ctx, step)
    _maybe_park()
    _maybe_block(ctx, step, "before")
    if isinstance(outcome, BaseException):
        raise outcome
    _record_effect(ctx, step)
    _maybe_block(ctx, step, "after")
    pause = float(_env("HOOK_SLEEP", "0"))
    if pause:
        time.sleep(pause)
    return outcome


# --- hooks -------------------------------------------------------------------------------


def _discoverer(automation: str, env_name: str) -> Any:
    def discover(ctx: HookContext) -> Iterable[str]:
        keys = expand_keys(_env(env_name, ""))
        _write(
            "INSERT INTO discoveries (automation, pid, at, keys) VALUES (?, ?, ?, ?)",
            (automation, os.getpid(), time.time(), ",".join(keys)),
        )
        return keys

    return discover


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"a": value}
    return value


def recurse(n: int) -> int:
    return recurse(n + 1) + 1


def hostile(ctx: HookContext, k: str) -> Any:
    """What the hostile kinds return or raise (each run recorded first)."""
    _record_run(ctx, "observe")
    if k == "deep":
        return Evidence({"deep": nested(600)})
    if k == "nan":
        return Evidence({"value": float("nan")})
    if k == "recursive":
        return recurse(0)
    if k == "memory":
        return bytearray(1 << 60)
    time.sleep(float(_env("SLOW", "3")))
    _record_effect(ctx, "observe")  # the late answer of an abandoned hook
    return Evidence({"slow": True})


def observe(ctx: HookContext) -> Any:
    assert ctx.item is not None
    k = kind(ctx.item.key)
    if k in ("deep", "nan", "recursive", "memory", "slow"):
        return hostile(ctx, k)
    outcome: Any = Evidence({"key": ctx.item.key, "kind": k}, classification=k)
    if k == "eyes":
        outcome = NeedsEyes("the lab cannot tell", owner="lab-operators", evidence={"k": k})
    elif k in ("broken", "wait") or (k == "flaky" and ctx.item.attempts == 1):
        outcome = TransientError(f"{ctx.item.key}: upstream timed out")
    elif k == "fatal":
        outcome = TerminalError(f"{ctx.item.key}: no authority to read this")
    return _step(ctx, "observe", outcome)


def propose(ctx: HookContext) -> Any:
    assert ctx.item is not None
    k = kind(ctx.item.key)
    outcome: Any
    if k == "review":
        outcome = ReportForReview({"summary": f"{ctx.item.key} looks fine"})
    elif k == "approve":
        outcome = Proposal("restart", {"service": ctx.item.key}, target=ctx.item.key)
    elif k == "revise":
        outcome = Proposal("write", {"draft": ctx.item.key}, target="drafts")
    else:
        outcome = Proposal("tidy", {"key": ctx.item.key}, target=ctx.item.key)
    return _step(ctx, "propose", outcome)


def execute(ctx: HookContext) -> Any:
    assert ctx.item is not None
    artifacts = []
    if kind(ctx.item.key) == "revise":
        artifacts.append(
            Artifact(
                key="note",
                title=f"Note {ctx.item.key}",
                summary="a lab draft",
                body=f"This is the lab draft for {ctx.item.key}, written once.",
            )
        )
    return _step(ctx, "execute", Deliver(artifacts))


def revise(ctx: HookContext, reason: str, current: Sequence[Artifact]) -> Sequence[Artifact]:
    _record_run(ctx, "revise")
    # a declared terminal failure: the revision fails, and `run` does not count it as a bug
    raise TerminalError("the lab's revise hook always fails")


def _automation(name: str, keys_env: str, base_delay: float, lease: float) -> Automation:
    drafts = _env("DRAFTS", "")
    return Automation(
        name=name,
        discover=_discoverer(name, keys_env),
        observe=observe,
        propose=propose,
        execute=execute,
        revise=revise,
        target=DirectoryTarget(os.path.join(drafts, name)) if drafts else None,
        every=float(_env("EVERY", "3600")),
        lease_seconds=lease,
        hook_timeout=float(_env("HOOK_TIMEOUT", "300")),
        retry=RetryPolicy(
            max_attempts=int(_env("MAX_ATTEMPTS", "3")),
            base_delay=base_delay,
            backoff=2.0,
            max_delay=max(base_delay, 5.0),
            jitter=float(_env("JITTER", "0")),
            resume_cap=int(_env("RESUME_CAP", "5")),
        ),
        approval=ApprovalPolicy(
            rules={
                "restart": ApprovalRule(roles=("approver",), approvals=1),
                "tidy": ApprovalRule(approvals=0),
                "write": ApprovalRule(approvals=0),
            }
        ),
    )


def build() -> App:
    lease = float(_env("LEASE", "10"))
    automations = [_automation("lab", "KEYS", float(_env("DELAY", "0.05")), lease)]
    if _env("PATIENT_KEYS", ""):
        patient_lease = float(_env("PATIENT_LEASE", str(lease)))
        automations.append(_automation("patient", "PATIENT_KEYS", 3600.0, patient_lease))
    return App(
        automations,
        actors={
            "alice": ("approver", "operator"),
            "carol": ("operator",),
            "dana": ("viewer",),
        },
    )


app = build()
