"""The command line under hostile arguments: ``stopline``'s ``main()`` in this process on a
fresh copy of the demo database per case, and a few cases as real processes with bytes that
are not UTF-8 in their argv.

Property: never a traceback or an internal error. The exit status is 0 (applied or read), 3
(refused by the core: at most its audit row is written) or 2 (malformed input: exactly one
``stopline...`` line on stderr, and nothing written, not even an audit row).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stopline.cli.main import main
from stopline.commands.entry import Entry, Shell
from stopline.commands.fields import Type
from stopline.commands.table import exposed

from .conftest import PEOPLE, DemoTemplate
from .kit import (
    Tally,
    changes,
    fuzz_settings,
    hostile_texts,
    int_texts,
    json_texts,
    snapshot,
    tally,
)

ENTRIES = exposed(Shell.CLI)
EXIT_OK, EXIT_USAGE, EXIT_REFUSED = 0, 2, 3


def _value(draw: Any, entry: Entry, kind: Type, digests: list[str]) -> list[str]:
    if kind is Type.OBJECT:
        return [draw(json_texts())]
    if kind is Type.INT:
        return [draw(int_texts)]
    if kind is Type.TEXT:
        real = st.sampled_from(digests) | st.sampled_from(digests).map(lambda d: d[:12])
        return [draw(real | st.sampled_from(["approve", "reject", "reply"]) | hostile_texts())]
    return []


@st.composite
def item_argvs(draw: Any, refs: list[str], digests: list[str]) -> list[str]:
    """One item command of the table: its ITEM, --actor, its flags, hostile or fine."""
    entry = draw(st.sampled_from(ENTRIES))
    argv = [entry.name, draw(st.sampled_from(refs) | hostile_texts())]
    if entry.takes_actor and draw(st.integers(0, 9)):
        argv += ["--actor", draw(st.sampled_from(PEOPLE) | hostile_texts())]
    for f in entry.fields:
        if not draw(st.integers(0, 4)):
            continue  # left out (a required one: argparse's usage error)
        if f.type is Type.BOOL:
            argv.append(f.cli_flag)
        elif f.type is Type.KEYS:
            for _ in range(draw(st.integers(1, 3))):
                argv += [
                    f.cli_flag,
                    draw(st.sampled_from(["article-1", "reply"]) | hostile_texts()),
                ]
        else:
            argv += [f.cli_flag, *_value(draw, entry, f.type, digests)]
    if entry.idempotent and not draw(st.integers(0, 3)):
        argv += ["--idempotency-key", draw(st.sampled_from(["k-1"]) | hostile_texts())]
    if not draw(st.integers(0, 5)):
        argv += draw(st.sampled_from([["--nope"], ["--json"], ["--actor"], [hostile_text_flag()]]))
    return argv


def hostile_text_flag() -> str:
    return "--\udcff"


@st.composite
def admin_argvs(draw: Any, refs: list[str]) -> list[str]:
    """The reading and registry commands."""
    ref = draw(st.sampled_from(refs) | hostile_texts())
    text = draw(hostile_texts())
    return draw(
        st.sampled_from(
            [
                ["show", ref],
                ["show", ref, "--json"],
                ["history", ref],
                ["items", "--state", text],
                ["items", "--automation", text],
                ["items", "--limit", draw(int_texts)],
                ["actors", "token", text],
                ["actors", "revoke", text],
                [
                    "actors",
                    "add",
                    text,
                    "--role",
                    draw(st.sampled_from(["approver"]) | hostile_texts()),
                ],
                [text],
            ]
        )
    )


# A traceback printed: a line that starts one. (An item's history may hold a hook's traceback
# as data; in JSON it is one escaped string, never a line of the output.)
TRACEBACK = re.compile(r"^Traceback \(most recent call last\):", re.MULTILINE)


def run_main(argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` in this process: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors and --help
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def check_answer(t: Tally, argv: list[str], code: int, stdout: str, stderr: str) -> None:
    shown = repr(argv)[:400]
    if TRACEBACK.search(f"{stdout}\n{stderr}") or code not in (EXIT_OK, EXIT_USAGE, EXIT_REFUSED):
        t.crash(f"{shown} exited {code}\n{stderr[-2000:]}")
    if code == EXIT_USAGE:
        lines = [line for line in stderr.splitlines() if line.startswith("stopline")]
        if len(lines) != 1:
            t.crash(f"{shown}: exit 2 with {len(lines)} message lines\n{stderr[-2000:]}")


def test_a_traceback_held_as_data_is_no_crash(
    demo_db: DemoTemplate, tmp_path: Path, clean_env: None
) -> None:
    """The exhausted demo item's history holds its hook's tracebacks (as event data): printed
    as JSON they are strings, not a traceback of the command (the oracle once took them for
    one when the fuzzer drew that item)."""
    url = demo_db.copy(tmp_path)
    argv = ["history", "service-health/billing-api", "--json", "--db", url]
    code, stdout, stderr = run_main(argv)
    assert code == EXIT_OK and "Traceback (most recent call last)" in stdout
    assert not TRACEBACK.search(f"{stdout}\n{stderr}")


def test_the_cli_answers_hostile_arguments(
    demo_db: DemoTemplate, tmp_path: Path, clean_env: None, record_property: Any
) -> None:
    with tally("cli: main() in process", record_property) as t:

        @fuzz_settings(weight=4)
        @given(
            argv=item_argvs(demo_db.refs, demo_db.digests) | admin_argvs(demo_db.refs),
            as_json=st.booleans(),
        )
        def case(argv: list[str], as_json: bool) -> None:
            t.cases += 1
            url = demo_db.copy(tmp_path)
            full = [*argv, *(["--json"] if as_json else []), "--db", url]
            before = snapshot(url)
            code, stdout, stderr = run_main(full)
            check_answer(t, full, code, stdout, stderr)
            if code == EXIT_OK:
                t.accepted += 1
                return
            t.refused += 1
            changed = changes(before, snapshot(url), audit=code == EXIT_REFUSED)
            if changed:
                t.wrote(f"{repr(full)[:400]} exited {code} and {changed}")

        case()


# --- real processes, argv as bytes --------------------------------------------------------------

ITEM = "service-health/checkout-api"
EVERY_RUN = 3  # the first three run every time; all of them in slow runs (STOPLINE_SLOW=1)
PROCESS_CASES = [
    pytest.param([b"show", b"\xff"], id="ref-not-utf8"),
    pytest.param([b"items", b"--automation", b"a\xc0\xafb"], id="filter-overlong-utf8"),
    pytest.param(
        [b"close", ITEM.encode(), b"--actor", b"\xed\xa0\x80", b"--reason", b"x"],
        id="actor-surrogate-bytes",
    ),
    pytest.param(
        [b"close", ITEM.encode(), b"--actor", b"carol", b"--reason=\xfe"], id="reason-not-utf8"
    ),
    pytest.param(
        [b"edit", ITEM.encode(), b"--actor", b"carol", b"--params", b'{"a": NaN}'], id="params-nan"
    ),
    pytest.param(
        [b"edit", ITEM.encode(), b"--actor", b"carol", b"--params", b'{"a": 1e999}'],
        id="params-1e999",
    ),
    pytest.param(
        [b"edit", ITEM.encode(), b"--actor", b"carol", b"--params", b"[" * 600 + b"]" * 600],
        id="params-600-deep",
    ),
    pytest.param(
        [b"edit", ITEM.encode(), b"--actor", b"carol", b"--params", b'{"a": ' + b"7" * 5000 + b"}"],
        id="params-5000-digits",
    ),
    pytest.param(
        [
            b"resolve",
            b"support-triage/msg-1043",
            b"--actor",
            b"carol",
            b"--reason",
            b"r",
            b"--input",
            b'{"a": "\\ud800"}',
        ],
        id="input-lone-surrogate",
    ),
    pytest.param(
        [
            b"resume",
            b"service-health/billing-api",
            b"--actor",
            b"carol",
            b"--reason",
            b"r",
            b"--attempts",
            b"9" * 5000,
        ],
        id="attempts-5000-digits",
    ),
]


@pytest.mark.parametrize(
    "argv",
    PROCESS_CASES[:EVERY_RUN]
    + [pytest.param(*p.values, id=p.id, marks=pytest.mark.slow) for p in PROCESS_CASES[EVERY_RUN:]],
)
def test_a_stopline_process_refuses_hostile_bytes_in_one_line(
    argv: list[bytes], demo_db: DemoTemplate, tmp_path: Path, record_property: Any
) -> None:
    with tally("cli: real process, argv bytes", record_property) as t:
        t.cases += 1
        url = demo_db.copy(tmp_path)
        env = {k: v for k, v in os.environ.items() if not k.startswith("STOPLINE_")}
        before = snapshot(url)
        done = subprocess.run(
            [sys.executable.encode(), b"-m", b"stopline.cli.main", *argv, b"--db", url.encode()],
            capture_output=True,
            env=env,
            timeout=120,
        )
        stderr = done.stderr.decode("utf-8", "replace")
        check_answer(t, [repr(a) for a in argv], done.returncode, "", stderr)
        assert done.returncode == EXIT_USAGE, stderr
        t.refused += 1
        changed = changes(before, snapshot(url), audit=False)
        if changed:
            t.wrote(f"{argv!r}: {changed}")
