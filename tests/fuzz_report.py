"""The fuzz report: every fuzz test (tests/fuzz) records one row with
``record_property("fuzz", row)``; at the end of the run the rows and their totals are printed
(``pytest_terminal_summary``) and, when ``STOPLINE_FUZZ_REPORT`` names a file, written to it
as JSON. docs/reliability.md quotes the numbers of such a run.

A plugin registered by tests/conftest.py, so that with ``pytest -n`` the controller, which
sees every report, prints the table."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

REPORT_ENV = "STOPLINE_FUZZ_REPORT"
COUNTS = ("cases", "refused", "accepted", "crashes", "refused_writes")


class FuzzReport:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == "fuzz":
                self.rows.append({**value, "test": report.nodeid, "outcome": report.outcome})

    def targets(self) -> list[dict[str, Any]]:
        """One row per target (a parametrized test's cases added up), in the order run."""
        merged: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            into = merged.setdefault(
                row["target"], {"target": row["target"], "tests": 0, "failed": 0}
            )
            into["tests"] += 1
            into["failed"] += row["outcome"] != "passed"
            for k in COUNTS:
                into[k] = into.get(k, 0) + int(row.get(k, 0))
        return list(merged.values())

    def summary(self) -> tuple[str, dict[str, Any]]:
        targets = self.targets()
        totals = {k: sum(int(r.get(k, 0)) for r in self.rows) for k in COUNTS}
        header = ("target", "tests", *COUNTS, "failed")
        lines = [header] + [
            (r["target"], str(r["tests"]), *(str(r[k]) for k in COUNTS), str(r["failed"]))
            for r in targets
        ]
        failed = sum(r["failed"] for r in targets)
        lines.append(("total", str(len(self.rows)), *(str(totals[k]) for k in COUNTS), str(failed)))
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        text = "\n".join(
            "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
            for line in lines
        )
        return text, {"targets": targets, "totals": {**totals, "failed": failed}}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.rows:
            return
        text, doc = self.summary()
        terminalreporter.write_sep("=", "fuzz report")
        terminalreporter.write_line(text)
        target = os.environ.get(REPORT_ENV)
        if target:
            Path(target).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
