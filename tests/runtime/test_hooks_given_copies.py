"""A hook is handed copies: what it does to the records in its context, even through ``dict``'s
own methods (which a read-only mapping cannot refuse), reaches neither the worker's record nor
what its store keeps of the rows it read and checked, so the check before acting and the next
hook see what is stored and sealed (in process, one SQLite store, its memos warm)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers import T0
from stopline.core.artifacts import Artifact
from stopline.core.frozen import FrozenDict, private_copy
from stopline.core.integrity import head_findings
from stopline.core.policy import ApprovalPolicy, ApprovalRule
from stopline.core.states import State
from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import Deliver, Evidence, Proposal
from stopline.runtime.scheduler import Scheduler
from stopline.runtime.worker import Worker
from stopline.store import open_store


def _tamper_in_place(ctx: HookContext) -> None:
    """What hostile hook code can do to the mappings it was handed, FrozenDict or not."""
    assert ctx.item is not None
    evidence = ctx.item.data["evidence"]
    dict.__setitem__(evidence["data"], "amount", 999_999)
    evidence["data"].__init__(extra="injected")  # a second __init__ fills a dict again
    dict.__setitem__(ctx.item.data, "note", "injected")


@pytest.mark.parametrize("lockstep", [False, True])
def test_what_a_hook_does_to_its_context_reaches_no_record_kept(
    tmp_path: Path, lockstep: bool
) -> None:
    seen: dict[str, Any] = {}

    def observe(ctx: HookContext) -> Evidence:
        return Evidence({"amount": 100})

    def propose(ctx: HookContext) -> Proposal:
        _tamper_in_place(ctx)
        return Proposal("tidy", {})

    def execute(ctx: HookContext) -> Deliver:
        assert ctx.item is not None
        seen["evidence"] = ctx.evidence
        seen["note"] = ctx.item.data.get("note")
        return Deliver()

    app = App(
        [
            Automation(
                name="auto",
                discover=lambda ctx: ["k1"],
                observe=observe,
                propose=propose,
                execute=execute,
                approval=ApprovalPolicy(rules={"tidy": ApprovalRule(approvals=0)}),
            )
        ]
    )
    url = f"sqlite:///{tmp_path / 'copies.db'}"
    store = open_store(url)
    try:
        Scheduler(store, app, clock=lambda: T0).tick(force=True)
        worker = Worker(store, app, clock=lambda: T0, renew=False, lockstep=lockstep)
        while worker.tick():
            pass
        worker.close()
        (item,) = store.list_items()
        assert item.state == State.COMPLETED
        assert seen == {"evidence": {"amount": 100}, "note": None}
        warm = store.current(item.id)  # the same store: what it keeps of the rows it read
        cold = open_store(url, migrate=False)
        try:
            fresh = cold.current(item.id)
        finally:
            cold.close()
        assert head_findings(*warm) == [] and head_findings(*fresh) == []
        assert warm[0].data == fresh[0].data
        assert warm[0].data["evidence"]["data"] == {"amount": 100}
        assert "note" not in warm[0].data
    finally:
        store.close()


def test_a_private_copy_shares_no_mapping_with_its_original() -> None:
    original = FrozenDict(
        {"a": FrozenDict({"b": (FrozenDict({"c": 1}), "s")}), "t": ("x", FrozenDict())}
    )
    copy = private_copy(original)
    assert copy == original and type(copy) is FrozenDict
    dict.__setitem__(copy["a"]["b"][0], "c", 2)
    dict.__setitem__(copy["t"][1], "new", True)
    assert original == {"a": {"b": ({"c": 1}, "s")}, "t": ("x", {})}


def test_an_artifact_a_target_is_handed_holds_no_mapping_of_the_record() -> None:
    content = FrozenDict(
        {
            "key": "a",
            "title": "t",
            "summary": "s",
            "body": "b",
            "metadata": FrozenDict({"labels": FrozenDict({"team": "ops"})}),
        }
    )
    artifact = Artifact.from_plain(content)
    dict.__setitem__(artifact.metadata["labels"], "team", "someone else")
    assert content["metadata"]["labels"] == {"team": "ops"}
