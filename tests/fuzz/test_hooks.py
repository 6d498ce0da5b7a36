"""Hook outputs under fuzz: hostile values returned by the observe and propose hooks (and
hostile discovery keys) through the real scheduler and worker in this process, on a real
SQLite file and a fixed clock.

Property: the worker never raises and goes on; an output beyond the input limits, or without
the shape its outcome needs, is a recorded failure ``invalid_output`` that fails the item
(never retried, never a record holding it); what is not an outcome at all stops the item for
a person; a discovery key beyond the limits is rejected, never stored. After every case a
well-behaved item still completes on the same worker.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from stopline.core.limits import check, text_problem
from stopline.core.policy import ApprovalPolicy, ApprovalRule
from stopline.core.states import State
from stopline.runtime.automation import App, Automation
from stopline.runtime.outcomes import (
    Deliver,
    Evidence,
    NeedsEyes,
    Proposal,
    ReportForReview,
)
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.worker import Worker
from stopline.store import Store, open_store
from strategies import hostile_values, json_values

from .kit import fuzz_settings, hostile_texts, shown, tally

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
GOOD = Evidence({"ok": True})
Output = Callable[[], Any]


class Slot:
    """What the hooks answer for the current case, and the keys discovery lists."""

    def __init__(self) -> None:
        self.keys: list[Any] = []
        self.observe: Output = lambda: GOOD
        self.propose: Output = lambda: Proposal("tidy", {})


def make_app(slot: Slot) -> App:
    rule = ApprovalPolicy(rules={"tidy": ApprovalRule(approvals=0)})
    return App(
        [
            Automation(
                name="fz",
                discover=lambda ctx: list(slot.keys),
                observe=lambda ctx: slot.observe(),
                propose=lambda ctx: slot.propose(),
                execute=lambda ctx: Deliver(),
                approval=rule,
                hook_timeout=60,
            )
        ]
    )


def hostile_outputs() -> st.SearchStrategy[tuple[str, Any, Output]]:
    """(the hook it comes from, the hostile value, the output that returns it)."""
    value = hostile_values(max_depth=700, max_string=300) | json_values()
    text = hostile_texts()
    return st.one_of(
        value.map(lambda v: ("observe", v, lambda: Evidence(v))),
        value.map(lambda v: ("observe", v, lambda: v)),  # not an outcome at all
        value.map(lambda v: ("observe", v, lambda: Evidence({"ok": 1}, classification=v))),
        value.map(lambda v: ("propose", v, lambda: Proposal("tidy", v))),
        text.map(lambda v: ("propose", v, lambda: Proposal(v, {}))),
        st.tuples(text, value).map(
            lambda p: (
                "propose",
                p,
                lambda: Proposal("tidy", {"a": 1}, target=p[0], rationale=p[1]),
            )
        ),
        value.map(lambda v: ("propose", v, lambda: ReportForReview(v))),
        st.tuples(text, text).map(lambda p: ("propose", p, lambda: NeedsEyes(p[0], owner=p[1]))),
        value.map(lambda v: ("propose", v, lambda: NeedsEyes("why", evidence=v))),
    )


def run_until_idle(worker: Worker) -> None:
    for _ in range(20):
        if not worker.tick():
            return
    raise AssertionError("the worker kept claiming on a fixed clock")


def state_of(store: Store, key: str) -> Any:
    return store.find("fz", key)


def test_hostile_hook_outputs_are_recorded_failures_and_the_worker_goes_on(
    tmp_path: Path, clean_env: None, record_property: Any
) -> None:
    slot = Slot()
    app = make_app(slot)
    store = open_store(f"sqlite:///{tmp_path / 'hooks.db'}")
    scheduler = Scheduler(store, app, clock=lambda: T0)
    worker = Worker(store, app, clock=lambda: T0, renew=False, host_trust=False)
    numbers = itertools.count()
    try:
        with tally("hook outputs: real worker", record_property) as t:

            @fuzz_settings(weight=2)
            @given(
                output=hostile_outputs(),
                extra_keys=st.lists(hostile_texts() | hostile_values(), max_size=2),
            )
            def case(output: tuple[str, Any, Output], extra_keys: list[Any]) -> None:
                t.cases += 1
                hook, value, answer = output
                key = f"k{next(numbers)}"
                slot.keys = [key, *extra_keys]
                slot.observe = answer if hook == "observe" else (lambda: GOOD)
                slot.propose = answer if hook == "propose" else (lambda: Proposal("tidy", {}))
                what = f"{hook} returning {shown(value)}"
                try:
                    scheduler.tick(force=True)
                    run_until_idle(worker)
                except Exception as exc:
                    t.crash(f"{what}: the worker raised {type(exc).__name__}: {exc}")
                item = state_of(store, key)
                assert item is not None, what
                if item.state is State.FAILED:
                    failure = item.doc("failure") or {}
                    if failure.get("class") != "invalid_output":
                        t.crash(f"{what}: failed as {failure.get('class')}, not invalid_output")
                    if (
                        len([e for e in item.attempt_log if e.get("class") == "invalid_output"])
                        != 1
                    ):
                        t.crash(f"{what}: invalid_output was retried")
                    t.refused += 1
                elif (
                    item.state is State.EXCEPTION
                    and hook == "observe"
                    and not isinstance(answer(), Evidence)
                ):
                    t.refused += 1  # not an outcome: stopped for a person
                else:
                    if isinstance(value, str) or check(value) == []:
                        t.accepted += 1
                    else:
                        t.wrote(f"{what}: beyond the input limits, yet {item.state.value}")
                for stored in store.list_items(automation="fz", limit=100_000):
                    if check(stored.key) or text_problem(stored.key):
                        t.wrote(f"the discovery key {shown(stored.key)} is beyond the limits")
                # the same worker still completes a well-behaved item
                slot.keys = [f"{key}-ok"]
                slot.observe, slot.propose = (lambda: GOOD), (lambda: Proposal("tidy", {}))
                scheduler.tick(force=True)
                run_until_idle(worker)
                done = state_of(store, f"{key}-ok")
                if done is None or done.state is not State.COMPLETED:
                    t.crash(f"after {what}, a good item ended {done and done.state.value}")

            case()
    finally:
        store.close()
