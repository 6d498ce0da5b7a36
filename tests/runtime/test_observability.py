"""What an operator watches: JSON log lines with the item's context, worker heartbeats shown
by ``stopline workers`` and ``/metrics`` (by automation, with histograms), and optional
OpenTelemetry spans."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from stopline import logs
from stopline.cli.workers import workers_doc
from stopline.http import metrics
from stopline.runtime import tracing
from stopline.store import open_store
from webhook_receiver import SECRET, Receiver

CLI = [sys.executable, "-m", "stopline.cli.main"]
STOPS_APP = str(Path(__file__).parent / "apps" / "stops.py") + ":app"


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_run_logs_json_lines_and_workers_leave_heartbeats(store_url: str) -> None:
    """``--log-format json``: every stderr line is one JSON object with item, automation,
    state, worker and decision; a decision line names them all. The worker's heartbeat is in
    ``stopline workers`` and in ``/metrics`` (step durations, oldest work item, build info)."""
    receiver = Receiver()
    env = {
        "STOPLINE_TEST_STOP_KEYS": "alpha,beta",
        "STOPLINE_LOG": "info",
        "STOPLINE_WEBHOOKS": json.dumps({"desk": [receiver.url]}),
        "STOPLINE_WEBHOOK_SECRET": SECRET,
    }
    try:
        done = cli(
            "run", STOPS_APP, "--once", "--linger", "0.2", "--json", "--log-format", "json",
            "--db", store_url, env=env,
        )  # fmt: skip
    finally:
        receiver.close()
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    assert lines
    for line in lines:
        assert {"time", "level", "logger", "message", *("item", "automation", "state")} <= set(line)
        assert {"worker", "decision"} <= set(line)
    decided = [x for x in lines if x["decision"] == "applied"]
    assert decided and all(x["item"] and x["worker"] for x in decided)
    assert {x["automation"] for x in decided} == {"desk"}
    assert {x["state"] for x in decided} >= {"exception"}
    sent = [x for x in lines if x["logger"] == "stopline.notify" and x.get("outcome")]
    assert sorted(x["outcome"] for x in sent) == ["delivered", "delivered"]
    assert {x["endpoint"] for x in sent} == {receiver.url} and all(x["item"] for x in sent)

    shown = cli("workers", "--json", "--db", store_url)
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    [worker] = doc["workers"]
    assert worker["automations"] == ["desk"] and worker["steps"] == 2
    text_form = cli("workers", "--db", store_url).stdout
    assert worker["worker"] in text_form and "steps 2" in text_form
    enabled = json.loads(
        cli("workers", "--enable", "http://x.example/", "--json", "--db", store_url).stdout
    )
    assert enabled == {"enabled": False, "url": "http://x.example/"}

    # live or stale is a matter of the clock: judged at the heartbeat's own time and five
    # minutes later, never at whatever time a loaded machine reaches this line
    store = open_store(store_url)
    try:
        [beat] = store.heartbeats.workers()
        seen = beat.seen_at
        assert workers_doc(store, seen)["live"] == 1
        assert workers_doc(store, seen + timedelta(minutes=5))["live"] == 0
        text = metrics.render(store.insights, seen)
        later = metrics.render(store.insights, seen + timedelta(minutes=5))
    finally:
        store.close()
    assert 'stopline_step_duration_seconds_count{automation="desk"} 2' in text
    assert 'stopline_step_duration_seconds_bucket{automation="desk",le="+Inf"} 2' in text
    assert 'stopline_automation_items{automation="desk",state="exception"} 2' in text
    assert "stopline_build_info{" in text
    assert 'stopline_workers{status="live"} 1' in text
    assert 'stopline_workers{status="stale"} 1' in later


def test_text_logs_are_the_default_and_a_bad_format_is_refused(store_url: str) -> None:
    bad = cli("run", STOPS_APP, "--once", "--db", store_url, env={"STOPLINE_LOG_FORMAT": "xml"})
    assert bad.returncode == 2 and "STOPLINE_LOG_FORMAT" in bad.stderr


def test_spans_per_step_with_the_sdk_in_memory_exporter() -> None:
    """With the OpenTelemetry SDK installed, :func:`tracing.span` records spans with the
    item's attributes and an error; without it, the same code is a no-op."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    assert tracing.enabled()
    with tracing.span("stopline.step", item="itm_1", automation="desk", worker=None):
        pass
    try:
        with tracing.span("stopline.hook", hook="observe"):
            raise ValueError("boom")
    except ValueError:
        pass
    spans: Any = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["stopline.step", "stopline.hook"]
    assert spans[0].attributes == {"stopline.item": "itm_1", "stopline.automation": "desk"}
    assert spans[1].status.status_code.name == "ERROR"


def test_until_a_provider_is_configured_a_span_costs_nothing() -> None:
    """In a fresh process: no span object while OpenTelemetry's own provider is the global
    one; real spans from the moment a provider is configured."""
    script = (
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import"
        " InMemorySpanExporter\n"
        "from stopline.runtime import tracing\n"
        "before = type(tracing.span('stopline.step', item='x')).__name__\n"
        "exporter = InMemorySpanExporter()\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
        "trace.set_tracer_provider(provider)\n"
        "with tracing.span('stopline.step', item='x'):\n"
        "    pass\n"
        "print(before, [s.name for s in exporter.get_finished_spans()])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split("\n")[0] == "nullcontext ['stopline.step']"


def test_without_opentelemetry_a_span_is_a_no_op(monkeypatch: Any) -> None:
    monkeypatch.setattr(tracing, "_trace", None)
    assert not tracing.enabled()
    with tracing.span("stopline.step", item="x"):
        pass


def _deep(n: int) -> Any:
    if n == 0:
        raise ValueError("the ledger API said no " + "x" * 300)
    return _deep(n - 1)


def test_an_exception_keeps_a_bounded_traceback_as_evidence(store_url: str) -> None:
    """A hook that raises stops the item in ``exception`` with the traceback as evidence: its
    end (the raising frame and the exception line) kept, within ``MAX_TRACEBACK``."""
    from stopline.core.limits import MAX_TRACEBACK
    from stopline.core.states import State
    from stopline.runtime.automation import App, Automation
    from stopline.runtime.scheduler import Scheduler
    from stopline.runtime.worker import Worker

    app = App(
        [
            Automation(
                name="deep",
                discover=lambda ctx: ["k1"],
                observe=lambda ctx: _deep(200),
                propose=lambda ctx: None,
            )
        ]
    )
    store = open_store(store_url)
    try:
        Scheduler(store, app).tick(force=True)
        worker = Worker(store, app, renew=False)
        while worker.tick():
            pass
        [item] = store.list_items()
        assert item.state is State.EXCEPTION
        trace = item.data["exception"]["evidence"]["traceback"]
    finally:
        store.close()
    assert len(trace) <= MAX_TRACEBACK and trace.startswith("Traceback")
    assert trace.rstrip().endswith("ValueError: the ledger API said no " + "x" * 300)
    assert "in _deep" in trace


def test_a_long_traceback_keeps_its_end() -> None:
    from stopline.core.limits import MAX_TRACEBACK, truncate_traceback

    long = "".join(f"  File frame{n}.py, line {n}\n" for n in range(1000)) + "KeyError: 'x'\n"
    kept = truncate_traceback(long + "\ud800")
    assert len(kept) == MAX_TRACEBACK and kept.startswith("...\n")
    assert kept.endswith("KeyError: 'x'\n?") and truncate_traceback("short") == "short"


def test_a_text_log_line_is_one_line_whatever_it_quotes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An item's key, a hook's message or a request's path may hold a newline or a terminal
    escape: quoted in a text log line, it is written as its escape (before, it could add a
    line of its own, say a forged ERROR). A traceback still follows on its own lines."""
    root = logging.getLogger()
    kept = (list(root.handlers), root.level)
    monkeypatch.delenv(logs.ENV_FORMAT, raising=False)
    try:
        logs.configure("text", level="INFO")
        log = logging.getLogger("stopline.test")
        log.warning("item %s stopped", "k\nERROR:stopline.worker:forged\x1b[2J\u2028")
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("a hook raised %s", "x\ny")
    finally:
        root.handlers[:], root.level = kept
    lines = capsys.readouterr().err.splitlines()
    assert (
        lines[0]
        == "WARNING:stopline.test:item k\\nERROR:stopline.worker:forged\\x1b[2J\\u2028 stopped"
    )
    assert lines[1] == "ERROR:stopline.test:a hook raised x\\ny"
    assert lines[2] == "Traceback (most recent call last):"
    assert not any(line.startswith("ERROR:stopline.worker") for line in lines)
