"""The approval guard on plain and async tool functions: the first call proposes, an approved
call runs once with exactly the approved arguments, a replay writes nothing."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import pytest

from helpers import dump, in_thread
from integrity.attacker import Attacker
from stopline.agents.answers import Answer
from stopline.agents.desk import AgentDesk
from stopline.agents.guard import (
    ActionStopped,
    ApprovalGuard,
    ApprovalPending,
    ApprovalRejected,
    GuardError,
    Pending,
)
from stopline.controller import Controller
from stopline.store import Store

from .conftest import AGENT, AUTOMATION, AgentLab


@pytest.fixture
def opened(lab: AgentLab) -> Iterator[tuple[Store, Controller]]:
    store = lab.store()
    try:
        yield store, Controller(store)
    finally:
        store.close()


def test_a_guarded_call_waits_runs_once_and_replays(opened: tuple[Store, Controller]) -> None:
    store, people = opened
    guard = ApprovalGuard(store, agent=AGENT, automation=AUTOMATION)
    calls: list[tuple[str, int]] = []

    @guard.requires_approval(action="restart", target=lambda service, grace=30: service)
    def restart(service: str, grace: int = 30) -> dict[str, Any]:
        calls.append((service, grace))
        return {"restarted": service, "grace": grace}

    with pytest.raises(ApprovalPending) as first:
        restart("billing-api")
    pending = first.value.pending
    assert pending.state == "awaiting_approval" and len(pending.digest) == 64
    before = dump(store)
    with pytest.raises(ApprovalPending):
        restart("billing-api", grace=30)  # the same call: still waiting, nothing written
    assert dump(store) == before and calls == []
    assert guard.wait(pending, timeout=0) == "waiting"

    decision = people.approve(pending.ref, proposal=pending.digest, actor="alice")
    assert decision.applied
    assert guard.wait(pending, timeout=5) == "approved"
    assert restart("billing-api") == {"restarted": "billing-api", "grace": 30}
    assert calls == [("billing-api", 30)]

    before = dump(store)
    assert restart("billing-api") == {"restarted": "billing-api", "grace": 30}  # recorded
    assert calls == [("billing-api", 30)] and dump(store) == before

    with pytest.raises(ApprovalPending) as other:  # other arguments: another proposal
        restart("billing-api", grace=5)
    assert other.value.pending.item != pending.item
    assert calls == [("billing-api", 30)]
    item = people.item(pending.ref)
    assert item is not None and item.state.value == "completed"
    assert item.doc("result") == {"value": {"restarted": "billing-api", "grace": 30}}


def test_the_approved_arguments_are_the_ones_that_run(opened: tuple[Store, Controller]) -> None:
    """A person's edit is what was approved: the function runs with the edited arguments."""
    store, people = opened
    guard = ApprovalGuard(store, agent=AGENT, automation=AUTOMATION, on_pending="return")
    seen: list[int] = []

    @guard.requires_approval(action="restart", target="billing-api")
    def restart(grace: int) -> int:
        seen.append(grace)
        return grace

    pending = restart(60)
    assert isinstance(pending, Pending)
    edited = people.edit(pending.ref, actor="alice", params={"grace": 10})
    assert edited.applied
    assert guard.wait(pending, timeout=0) == "waiting"
    current = people.item(pending.ref)
    assert current is not None
    people.approve(pending.ref, proposal=current.doc("proposal")["digest"], actor="mal")  # refused
    assert people.item(pending.ref).state.value == "awaiting_approval"  # type: ignore[union-attr]
    people.add_actor("bob", ["approver"])
    assert people.approve(
        pending.ref, proposal=current.doc("proposal")["digest"], actor="bob"
    ).applied
    assert restart(60) == 10 and seen == [10]


def test_a_rejected_call_never_runs(opened: tuple[Store, Controller]) -> None:
    store, people = opened
    guard = ApprovalGuard(store, agent=AGENT, automation=AUTOMATION, on_pending="return")
    ran: list[str] = []

    @guard.requires_approval(action="restart", target="x")
    def restart(service: str) -> None:
        ran.append(service)

    pending = restart("x")
    assert isinstance(pending, Pending)
    assert people.reject(pending.ref, actor="alice", reason="not now").applied
    with pytest.raises(ApprovalRejected):
        restart("x")
    assert ran == []


def test_a_failed_call_stops_for_a_person_and_never_runs_again(
    opened: tuple[Store, Controller], lab: AgentLab
) -> None:
    store, people = opened
    guard = ApprovalGuard(store, agent=AGENT, automation=AUTOMATION, on_pending="return")
    ran: list[str] = []

    @guard.requires_approval(action="restart", target="x")
    def restart(service: str) -> None:
        ran.append(service)
        raise RuntimeError("the service did not come back")

    pending = restart("x")
    assert isinstance(pending, Pending)
    people.approve(pending.ref, proposal=pending.digest, actor="alice")
    with pytest.raises(RuntimeError):
        restart("x")
    item = people.item(pending.ref)
    assert item is not None and item.state.value == "exception"
    with pytest.raises(ActionStopped):
        restart("x")
    assert ran == ["x"]
    lab.cli("verify")


def test_an_async_function_is_guarded_the_same_way(opened: tuple[Store, Controller]) -> None:
    store, people = opened
    guard = ApprovalGuard(store, agent=AGENT, automation=AUTOMATION)
    ran: list[str] = []

    @guard.requires_approval(action="restart", target="billing-api")
    async def restart(service: str) -> str:
        ran.append(service)
        await asyncio.sleep(0)
        return f"{service} restarted"

    with pytest.raises(ApprovalPending) as first:
        in_thread(asyncio.run, restart("billing-api"))
    pending = first.value.pending
    people.approve(pending.ref, proposal=pending.digest, actor="alice")
    assert in_thread(asyncio.run, restart("billing-api")) == "billing-api restarted"
    before = dump(store)
    assert in_thread(asyncio.run, restart("billing-api")) == "billing-api restarted"
    assert ran == ["billing-api"] and dump(store) == before


def test_arguments_without_a_json_form_are_refused_before_anything_is_written(
    opened: tuple[Store, Controller],
) -> None:
    store, _ = opened
    guard = ApprovalGuard(store, agent=AGENT, automation=AUTOMATION)

    @guard.requires_approval(action="restart", target="x")
    def restart(service: object) -> None:
        raise AssertionError("never runs")

    before = dump(store)
    with pytest.raises(Exception) as refused:
        restart(object())
    assert "invalid_input" in getattr(refused.value, "reasons", ())
    assert dump(store) == before


def test_forged_arguments_never_run_even_when_put_back_before_the_acting_step(
    lab: AgentLab, opened: tuple[Store, Controller]
) -> None:
    """Someone with the database forges the approved call's arguments, and puts them back
    the moment before the acting step checks the record (which then passes): the read the
    call makes first is checked too, so the call stops there and nothing runs; and had that
    read passed, the function would run with the arguments the acting step checked (the
    ``begun`` answer's), never with those of an earlier read."""
    store, people = opened
    attacker = Attacker(lab.url)
    ref = ""
    genuine: dict[str, Any] = {}
    begun: list[str] = []

    class PutBackFirst(AgentDesk):
        def begin(self, item: str, digest: str) -> Answer:
            attacker.put_data(ref, genuine)
            begun.append(item)
            return super().begin(item, digest)

    desk = PutBackFirst(store, AGENT)
    guard = ApprovalGuard(store, agent=AGENT, automation=AUTOMATION, on_pending="return", desk=desk)
    seen: list[int] = []

    @guard.requires_approval(action="restart", target="billing-api")
    def restart(grace: int) -> int:
        seen.append(grace)
        return grace

    try:
        pending = restart(60)
        assert isinstance(pending, Pending)
        ref = pending.ref
        assert people.approve(ref, proposal=pending.digest, actor="alice").applied
        genuine = attacker.data(ref)
        forged = copy.deepcopy(genuine)
        forged["proposal"]["params"] = {"grace": 0}
        attacker.put_data(ref, forged)
        with pytest.raises(GuardError) as stopped:
            restart(60)
        assert "integrity_failed" in stopped.value.reasons and seen == [] and begun == []
        attacker.put_data(ref, genuine)
        assert restart(60) == 60 and seen == [60] and begun == [ref]
    finally:
        attacker.close()


def test_a_forged_outcome_is_never_returned(
    lab: AgentLab, opened: tuple[Store, Controller]
) -> None:
    """A completed call's recorded outcome changed in the database: the call again neither
    returns the forged value (its caller would take an action for done that never was) nor runs
    the function; it stops with integrity_failed."""
    store, people = opened
    guard = ApprovalGuard(store, agent=AGENT, automation=AUTOMATION, on_pending="return")
    ran: list[int] = []

    @guard.requires_approval(action="transfer", target="ledger")
    def transfer(amount: int) -> dict[str, Any]:
        ran.append(amount)
        return {"transfer": "t-1", "amount": amount}

    pending = transfer(5)
    assert isinstance(pending, Pending)
    assert people.approve(pending.ref, proposal=pending.digest, actor="alice").applied
    assert transfer(5) == {"transfer": "t-1", "amount": 5} and ran == [5]
    attacker = Attacker(lab.url)
    try:
        data = attacker.data(pending.ref)
        data["result"] = {"value": {"transfer": "t-999", "amount": 5000}}
        attacker.put_data(pending.ref, data)
        with pytest.raises(GuardError) as stopped:
            transfer(5)
        assert "integrity_failed" in stopped.value.reasons
        assert ran == [5]
    finally:
        attacker.close()


def test_what_runs_is_what_the_acting_step_checked(opened: tuple[Store, Controller]) -> None:
    """Whatever the call's first read answered (here a desk whose ``get`` answers other
    arguments, as a read older than the acting step could), the function runs with the
    arguments of the record ``begin_action`` checked."""
    store, people = opened

    class OtherFirstRead(AgentDesk):
        def get(self, item: str) -> Answer:
            answer = super().get(item)
            if answer.ok and answer.data.get("proposal"):
                proposal = {**answer.data["proposal"], "params": {"grace": 0}}
                return Answer(True, {**answer.data, "proposal": proposal})
            return answer

    desk = OtherFirstRead(store, AGENT)
    guard = ApprovalGuard(store, agent=AGENT, automation=AUTOMATION, on_pending="return", desk=desk)
    seen: list[int] = []

    @guard.requires_approval(action="restart", target="billing-api")
    def restart(grace: int) -> int:
        seen.append(grace)
        return grace

    pending = restart(60)
    assert isinstance(pending, Pending)
    assert people.approve(pending.ref, proposal=pending.digest, actor="alice").applied
    assert restart(60) == 60 and seen == [60]


def test_an_acting_step_that_answers_for_another_proposal_runs_nothing(
    opened: tuple[Store, Controller],
) -> None:
    """A desk whose begin_action answers for another digest than the approved one (a bug, or
    a desk someone swapped in): the call stops (ActionStopped) and nothing runs."""
    store, people = opened

    class OtherDigest(AgentDesk):
        def begin(self, item: str, digest: str) -> Answer:
            answer = super().begin(item, digest)
            return Answer(answer.ok, {**answer.data, "digest": "f" * 64}) if answer.ok else answer

    desk = OtherDigest(store, AGENT)
    guard = ApprovalGuard(store, agent=AGENT, automation=AUTOMATION, on_pending="return", desk=desk)
    ran: list[int] = []

    @guard.requires_approval(action="restart", target="billing-api")
    def restart(grace: int) -> int:
        ran.append(grace)
        return grace

    pending = restart(60)
    assert isinstance(pending, Pending)
    assert people.approve(pending.ref, proposal=pending.digest, actor="alice").applied
    with pytest.raises(ActionStopped):
        restart(60)
    assert ran == []


def test_an_outcome_that_could_not_be_recorded_is_no_silent_success(
    opened: tuple[Store, Controller],
) -> None:
    """The agent loses its role while the approved function runs: the function ran (once),
    but its outcome cannot be recorded, and the call says so (GuardError) instead of
    returning as if all were done."""
    store, people = opened
    guard = ApprovalGuard(store, agent=AGENT, automation=AUTOMATION, on_pending="return")
    ran: list[int] = []

    @guard.requires_approval(action="restart", target="billing-api")
    def restart(grace: int) -> int:
        ran.append(grace)
        people.revoke_actor(AGENT, "agent")
        return grace

    pending = restart(60)
    assert isinstance(pending, Pending)
    assert people.approve(pending.ref, proposal=pending.digest, actor="alice").applied
    with pytest.raises(GuardError) as unrecorded:
        restart(60)
    assert "actor_not_authorized" in unrecorded.value.reasons and ran == [60]


def test_the_same_arguments_for_another_target_are_another_proposal(
    opened: tuple[Store, Controller],
) -> None:
    """Two guarded functions of one name and arguments, on two targets: each is its own
    proposal, and the outcome of one is never returned for the other."""
    store, people = opened
    guard = ApprovalGuard(store, agent=AGENT, automation=AUTOMATION, on_pending="return")

    def restart_on(target: str) -> Any:
        @guard.requires_approval(action="restart", target=target)
        def restart(grace: int) -> str:
            return f"{target} restarted"

        return restart

    billing, search = restart_on("billing-api"), restart_on("search-api")
    pending = billing(60)
    assert isinstance(pending, Pending)
    assert people.approve(pending.ref, proposal=pending.digest, actor="alice").applied
    assert billing(60) == "billing-api restarted"
    other = search(60)
    assert isinstance(other, Pending) and other.ref != pending.ref
