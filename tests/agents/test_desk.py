"""Agent items follow the same rules as any item: the retry budget counts the agent's
attempts, a spent budget is exhaustion with its account, only a person resumes it, and the
store verifies clean afterwards. An agent touches only its own items."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from helpers import dump
from stopline.agents.desk import AgentDesk
from stopline.clock import utcnow
from stopline.controller import Controller
from stopline.core.commands import Command
from stopline.core.decision import Decision
from stopline.core.frozen import freeze
from stopline.store import Store

from .conftest import AGENT, AUTOMATION, AgentLab


@pytest.fixture
def opened(lab: AgentLab) -> Iterator[tuple[Store, Controller]]:
    store = lab.store()
    try:
        yield store, Controller(store)
    finally:
        store.close()


def approved(desk: AgentDesk, people: Controller, key: str) -> tuple[str, str]:
    made = desk.propose(AUTOMATION, key, "restart", "x", {"n": 1}, {"seen": True})
    assert made.ok, made
    ref, digest = made.data["ref"], made.data["digest"]
    assert people.approve(ref, proposal=digest, actor="alice").applied
    return ref, digest


def test_failures_spend_the_budget_and_a_person_resumes(
    opened: tuple[Store, Controller], lab: AgentLab
) -> None:
    store, people = opened
    desk = AgentDesk(store, AGENT)
    ref, digest = approved(desk, people, "k1")
    assert desk.begin(ref, digest).ok
    first = desk.record(ref, digest, "failed", message="timeout", retryable=True)
    assert first.ok and first.data["state"] == "delivering" and first.data["attempts"] == 1
    second = desk.record(ref, digest, "failed", message="timeout again", retryable=True)
    assert second.ok and second.data["state"] == "exhausted", second
    assert [a["attempt"] for a in second.data["account"]["attempts"]] == [1, 2]
    refused = desk.record(ref, digest, "done", result={"ok": True})
    assert not refused.ok and refused.reasons == ("illegal_transition",)

    lab.cli("resume", ref, "--actor", "alice", "--reason", "the service is back")
    done = desk.record(ref, digest, "done", result={"ok": True})
    assert done.ok and done.data["state"] == "completed", done
    lab.cli("verify")


def test_an_unknown_failure_stops_for_a_person(opened: tuple[Store, Controller]) -> None:
    """A failure the agent does not call retryable is never retried blind: exception."""
    store, people = opened
    desk = AgentDesk(store, AGENT)
    ref, digest = approved(desk, people, "k2")
    assert desk.begin(ref, digest).ok
    failed = desk.record(ref, digest, "failed", message="it broke")
    assert failed.ok and failed.data["state"] == "exception"


def test_an_agent_touches_only_its_own_items_and_agent_automations(
    opened: tuple[Store, Controller],
) -> None:
    store, people = opened
    ours = AgentDesk(store, AGENT)
    ref, digest = approved(ours, people, "k3")
    people.add_actor("other-bot", ["agent"])
    other = AgentDesk(store, "other-bot")
    for answer in (
        other.get(ref),
        other.begin(ref, digest),
        other.record(ref, digest, "done"),
        other.propose(AUTOMATION, "k3", "restart", "x", {"n": 1}, {}),
        other.needs_eyes(AUTOMATION, "k3", "mine now", "sre"),
    ):
        assert not answer.ok and answer.reasons == ("not_your_item",), answer
    assert [i["key"] for i in other.list().data["items"]] == []
    assert not AgentDesk(store, "alice").propose(AUTOMATION, "k9", "a", "t", {}, {}).ok
    wrong = ours.propose("nowhere", "k", "a", "t", {}, {})
    assert wrong.reasons == ("unknown_automation",)
    begun = ours.begin(ref, "0" * 64)
    assert begun.reasons == ("proposal_digest_mismatch",)
    assert people.item(ref).state.value == "approved"  # type: ignore[union-attr]


def test_an_agent_starts_no_item_in_an_automation_its_workers_run(
    opened: tuple[Store, Controller],
) -> None:
    """An automation that is not an agent automation is run by workers, which would carry out
    whatever its items propose once approved: an agent starts none there (the desk refuses,
    and so does the core, should a caller skip the desk), and nothing is written."""
    from stopline.core.commands import Discover
    from stopline.core.decide import decide
    from stopline.core.step import Context
    from stopline.runtime.automation import App, Automation
    from stopline.runtime.scheduler import Scheduler

    store, _ = opened
    plain = Automation("plain", lambda ctx: [], lambda ctx: None, lambda ctx: None)
    Scheduler(store, App([plain])).register()
    before = dump(store)
    made = AgentDesk(store, AGENT).propose("plain", "k", "restart", "x", {"n": 1}, {})
    assert not made.ok and made.reasons == ("not_an_agent_automation",), made
    assert dump(store) == before
    policy = store.policy("plain")
    assert policy is not None and not policy.agent
    command = Discover(item_id="itm_plain", automation="plain", key="k", agent=AGENT)
    decision = decide(None, command, Context(datetime.now(UTC), policy))
    assert not decision.applied and decision.reasons == ("not_an_agent_automation",)


def test_a_person_sends_a_proposal_back_and_the_agent_proposes_again(
    opened: tuple[Store, Controller],
) -> None:
    store, people = opened
    desk = AgentDesk(store, AGENT)
    made = desk.propose(AUTOMATION, "k4", "restart", "x", {"n": 1}, {"seen": True})
    ref, digest = made.data["ref"], made.data["digest"]
    assert people.reject(ref, actor="alice", reason="use n=2", send_back=True).applied
    assert desk.wait(ref, digest, 0).data["status"] == "rejected"
    again = desk.propose(AUTOMATION, "k4", "restart", "x", {"n": 2}, {"seen": True})
    assert again.ok and again.data["state"] == "awaiting_approval"
    assert desk.wait(ref, digest, 0).data["status"] == "changed"
    edited = people.edit(ref, actor="alice", params={"n": 3})
    assert edited.applied
    assert desk.wait(ref, again.data["digest"], 0).data["status"] == "changed"


def test_agent_commands_need_the_agent_role() -> None:
    """trust/checks.needed_roles answers the agent role for every agent command."""
    from stopline.commands.agent_table import AGENT_ENTRIES
    from stopline.trust.checks import needed_roles

    for entry in AGENT_ENTRIES:
        assert entry.roles == needed_roles(None, entry.name, None) == {"agent"}


def test_a_tampered_agent_item_is_never_acted_on(
    opened: tuple[Store, Controller], lab: AgentLab
) -> None:
    """Parameters changed in the database after approval: begin_action does not let the agent
    act (the record no longer matches its sealed history), and verify names the item."""
    from integrity.attacker import Attacker

    store, people = opened
    desk = AgentDesk(store, AGENT)
    ref, digest = approved(desk, people, "k5")
    attacker = Attacker(lab.url)
    data = attacker.data(ref)
    data["proposal"]["params"] = {"n": 1000}
    attacker.put_data(ref, data)
    begun = desk.begin(ref, digest)
    assert not begun.ok and "integrity_failed" in begun.reasons, begun
    assert people.item(ref).state.value != "delivering"  # type: ignore[union-attr]
    found = lab.cli("verify", ok=(3,))
    assert people.item(ref).id in found.stdout  # type: ignore[union-attr]


def test_an_agent_reads_only_records_its_history_sealed(
    opened: tuple[Store, Controller], lab: AgentLab
) -> None:
    """A waiting proposal's parameters changed in the database: get_item, wait_for_decision
    and a propose_action that reads as a replay of it answer integrity_failed with what
    failed, never the forged record (an agent would prepare for parameters nobody approved);
    once put back, they answer again."""
    from integrity.attacker import Attacker

    store, _ = opened
    desk = AgentDesk(store, AGENT)
    made = desk.propose(AUTOMATION, "k-read", "restart", "x", {"n": 1}, {"seen": True})
    assert made.ok, made
    ref = made.data["ref"]
    attacker = Attacker(lab.url)
    try:
        genuine = attacker.data(ref)
        forged = {**genuine, "proposal": {**genuine["proposal"], "params": {"n": 1000}}}
        attacker.put_data(ref, forged)
        for answer in (desk.get(ref), desk.wait(ref, timeout=0)):
            assert not answer.ok and answer.reasons == ("integrity_failed",), answer
            assert "proposal" not in answer.data and "1000" not in str(answer.to_plain())
            assert any("seal" in line for line in answer.explanation), answer.explanation
        # proposing the forged parameters is no replay of a proposal nobody recorded
        again = desk.propose(AUTOMATION, "k-read", "restart", "x", {"n": 1000}, {"seen": True})
        assert not again.ok and again.reasons == ("integrity_failed",), again
        attacker.put_data(ref, genuine)
        assert desk.get(ref).data["proposal"]["params"] == {"n": 1}
        assert desk.wait(ref, timeout=0).data["status"] == "waiting"
    finally:
        attacker.close()


def test_authority_is_checked_again_before_the_agent_acts(
    opened: tuple[Store, Controller],
) -> None:
    """The approver lost the role after approving: begin_action refuses, the item is back at
    awaiting_approval, and the agent never got to act."""
    store, people = opened
    desk = AgentDesk(store, AGENT)
    people.add_actor("bob", ["approver"])
    made = desk.propose(AUTOMATION, "k6", "restart", "x", {"n": 1}, {"seen": True})
    ref, digest = made.data["ref"], made.data["digest"]
    assert people.approve(ref, proposal=digest, actor="bob").applied
    people.revoke_actor("bob", "approver")
    begun = desk.begin(ref, digest)
    assert not begun.ok and begun.data["state"] == "awaiting_approval", begun
    assert "actor_not_authorized" in begun.reasons or "approvals_missing" in begun.reasons
    assert desk.wait(ref, digest, 0).data["status"] == "waiting"


def test_an_approval_is_begun_once_even_by_the_same_agent(
    opened: tuple[Store, Controller],
) -> None:
    """Two processes speaking as the same agent: only the first begin_action goes ahead, so
    the approved action is carried out once."""
    store, people = opened
    first, second = AgentDesk(store, AGENT), AgentDesk(store, AGENT)
    ref, digest = approved(first, people, "k7")
    assert first.begin(ref, digest).ok
    again = second.begin(ref, digest)
    assert not again.ok and again.reasons == ("illegal_transition",)
    assert first.record(ref, digest, "done", result={"ok": 1}).data["state"] == "completed"


def test_the_inbox_line_says_who_carries_an_agent_item_out(
    opened: tuple[Store, Controller],
) -> None:
    from stopline.views import why

    store, people = opened
    desk = AgentDesk(store, AGENT)
    made = desk.propose(AUTOMATION, "k8", "restart", "x", {"n": 1}, {"seen": True})
    assert why(people.item(made.data["ref"])).endswith(f"proposed by the agent {AGENT}")  # type: ignore[arg-type]
    ref, digest = made.data["ref"], made.data["digest"]
    people.approve(ref, proposal=digest, actor="alice")
    assert why(people.item(ref)).startswith(f"the agent {AGENT} carries it out")  # type: ignore[arg-type]


def test_stopline_mcp_refuses_to_speak_for_anyone_but_an_agent(lab: AgentLab) -> None:
    """On stdio the configured identity must be an active actor holding the agent role."""
    for args in (("--agent", "alice"), ("--agent", "nobody"), ()):
        done = lab.cli("mcp", *args, ok=(2,))
        assert "agent" in done.stderr


def test_an_agent_notes_its_own_items_as_an_ai_and_nothing_else_moves(
    opened: tuple[Store, Controller], lab: AgentLab
) -> None:
    """``add_note``: a comment in the history of the agent's own item, written as an AI with its
    declared name and family; the state stays; another agent's item and bad bodies are refused
    and write nothing; the store verifies clean."""
    store, people = opened
    desk = AgentDesk(store, AGENT)
    made = desk.propose(AUTOMATION, "k-note", "restart", "x", {"n": 1}, {"seen": True})
    ref = made.data["ref"]
    before = people.item(ref)
    assert before is not None
    noted = desk.note(ref, "checked the dashboard twice", family="scripted")
    assert noted.ok and noted.data["noted"], noted
    after = people.item(ref)
    assert after is not None and after.state == before.state and after.seq == before.seq + 1
    last = store.history(after.id)[-1]
    assert last.command == "note" and last.actor == AGENT
    assert last.detail["author"] == {"kind": "ai", "name": AGENT, "family": "scripted"}
    people.add_actor("other-bot", ["agent"])
    assert AgentDesk(store, "other-bot").note(ref, "mine now").reasons == ("not_your_item",)
    assert desk.note(ref, "   ").reasons == ("invalid_input",)
    # a person's command stays forbidden to the agent: only the note is its own
    refused = people.close(ref, actor=AGENT, reason="done")
    assert refused.reasons == ("agent_forbidden",)
    assert store.history(after.id)[-1].seq == last.seq
    lab.cli("verify")


def test_an_outcome_is_recorded_once_after_the_acting_step(
    opened: tuple[Store, Controller],
) -> None:
    """record_outcome before begin_action is refused and says to take the step first; once
    done, the same outcome again writes nothing, and another outcome is refused
    already_completed (never answered as recorded)."""
    store, people = opened
    desk = AgentDesk(store, AGENT)
    ref, digest = approved(desk, people, "k-once")
    early = desk.record(ref, digest, "done", {"restarted": True})
    assert not early.ok and early.reasons == ("illegal_transition",), early
    assert any("begin_action" in line for line in early.explanation), early.explanation
    assert desk.begin(ref, digest).ok
    assert desk.record(ref, digest, "done", {"restarted": True}).ok
    before = dump(store)
    again = desk.record(ref, digest, "done", {"restarted": True})
    assert again.ok and again.data["written"] is False
    other = desk.record(ref, digest, "done", {"restarted": False})
    assert not other.ok and other.reasons == ("already_completed",), other
    assert dump(store) == before


def test_an_agent_that_lost_its_role_records_nothing(opened: tuple[Store, Controller]) -> None:
    """The agent's role revoked after it began the approved action: its outcome is refused
    actor_not_authorized and nothing is written; the item waits, delivering, for a person."""
    store, people = opened
    desk = AgentDesk(store, AGENT)
    ref, digest = approved(desk, people, "k-revoked")
    assert desk.begin(ref, digest).ok
    people.revoke_actor(AGENT, "agent")
    before = dump(store)
    for answer in (
        desk.record(ref, digest, "done", {"restarted": True}),
        desk.record(ref, digest, "failed", message="gone"),
    ):
        assert not answer.ok and answer.reasons == ("actor_not_authorized",), answer
    assert dump(store) == before
    assert people.item(ref).state.value == "delivering"  # type: ignore[union-attr]


def test_a_second_stop_for_other_reasons_is_no_replay(opened: tuple[Store, Controller]) -> None:
    """needs_eyes again with the same why writes nothing and answers ok; with another why,
    the item is already stopped and the call is refused (never answered as recorded)."""
    store, _ = opened
    desk = AgentDesk(store, AGENT)
    assert desk.needs_eyes(AUTOMATION, "k-eyes", "disk almost full", "sre").ok
    before = dump(store)
    again = desk.needs_eyes(AUTOMATION, "k-eyes", "disk almost full", "sre")
    assert again.ok and again.data["written"] is False
    other = desk.needs_eyes(AUTOMATION, "k-eyes", "a different problem", "sre")
    assert not other.ok and other.reasons == ("illegal_transition",), other
    assert dump(store) == before


def test_a_forged_record_is_never_sealed_by_the_agents_next_step(
    opened: tuple[Store, Controller], lab: AgentLab
) -> None:
    """A proposal sent back, then its evidence forged in the database before the agent
    proposes again: the step is refused integrity_failed and stops the item, and the forged
    record is never sealed by a step of the agent's (it would pass every later check as
    the agent's own); verify names the item among the incidents stopped when found."""
    from integrity.attacker import Attacker

    store, people = opened
    desk = AgentDesk(store, AGENT)
    made = desk.propose(AUTOMATION, "k-launder", "restart", "x", {"n": 1}, {"seen": True})
    ref = made.data["ref"]
    assert people.reject(ref, actor="alice", reason="use n=2", send_back=True).applied
    attacker = Attacker(lab.url)
    try:
        data = attacker.data(ref)
        data["evidence"] = {**data["evidence"], "data": {"seen": False, "forged": True}}
        attacker.put_data(ref, data)
    finally:
        attacker.close()
    again = desk.propose(AUTOMATION, "k-launder", "restart", "x", {"n": 2}, {"seen": True})
    assert not again.ok and "integrity_failed" in again.reasons, again
    item = people.item(ref)
    assert item is not None and item.state.value != "awaiting_approval"
    assert store.history(item.id)[-1].command == "integrity_failed"
    report = lab.cli("verify").stdout  # the forge is a recorded incident: stopped when found
    assert "1 recorded incidents" in report and item.id in report, report


def _observe_event_altered(attacker: Any, ref: str) -> None:
    """An older event (one no ledger entry records) changed, its hash left as it was."""
    item = attacker.item(ref)
    event = next(e for e in attacker.history(item.id) if e.command == "observe")
    attacker.put_event(replace(event, detail=freeze({**event.detail, "forged": True})))


def _approve_event_rewritten_and_rehashed(attacker: Any, ref: str) -> None:
    """The approval's event changed and the item's chain re-hashed from there, the row made
    to match: only the ledger (which holds the approval event's hash) still knows."""
    item = attacker.item(ref)
    events = attacker.history(item.id)
    approve = next(e for e in events if e.command == "approve")
    forged = freeze({**approve.detail, "forged": True})
    events = [replace(e, detail=forged) if e.seq == approve.seq else e for e in events]
    item, events = attacker.rehash_chain(item, events, approve.seq)
    for event in events[approve.seq - 1 :]:
        attacker.put_event(event)
    attacker.put_item(item)


def _registry_event_appended(attacker: Any, ref: str) -> None:
    """A registry event granting a role, appended with its hash but with no ledger entry."""
    state = {"roles": ["approver"], "active": True}
    attacker.append_registry("dana", "add", {"roles": ["approver"], "state": state}, utcnow())


@pytest.mark.parametrize(
    "attack",
    [_observe_event_altered, _approve_event_rewritten_and_rehashed, _registry_event_appended],
)
def test_what_the_agent_checks_before_acting(
    opened: tuple[Store, Controller], lab: AgentLab, attack: Callable[[Any, str], None]
) -> None:
    """begin_action holds the whole history (an older event altered), the history against
    the ledger (a chain rewritten and re-hashed consistently) and the registry (an event no
    ledger entry records) before the agent acts: each stops the action integrity_failed."""
    from integrity.attacker import Attacker

    store, people = opened
    desk = AgentDesk(store, AGENT)
    ref, digest = approved(desk, people, "k-" + attack.__name__)
    attacker = Attacker(lab.url)
    try:
        attack(attacker, ref)
    finally:
        attacker.close()
    begun = desk.begin(ref, digest)
    assert not begun.ok and "integrity_failed" in begun.reasons, begun
    assert people.item(ref).state.value != "delivering"  # type: ignore[union-attr]


def test_a_deactivated_agent_does_nothing(opened: tuple[Store, Controller]) -> None:
    """The agent's actor deactivated (all of it, not one role): every writing command is
    refused actor_not_authorized and nothing is written."""
    store, people = opened
    desk = AgentDesk(store, AGENT)
    ref, digest = approved(desk, people, "k-inactive")
    people.revoke_actor(AGENT)
    before = dump(store)
    for answer in (
        desk.propose(AUTOMATION, "k-new", "restart", "x", {"n": 1}, {}),
        desk.begin(ref, digest),
        desk.needs_eyes(AUTOMATION, "k-new2", "why", "sre"),
    ):
        assert not answer.ok and answer.reasons == ("actor_not_authorized",), answer
    assert dump(store) == before


def test_an_acting_step_that_loses_a_race_is_refused(opened: tuple[Store, Controller]) -> None:
    """A person writes to the item (a note) after begin_action's checks and before its write:
    the write loses its compare-and-set, the answer is stale_version (never a go-ahead), and
    the item stays as the person left it, approved and not begun."""
    store, people = opened
    ref = ""

    class RejectedMeanwhile(AgentDesk):
        def _commit(self, decision: Decision, command: Command) -> Decision:
            if command.name == "execute":
                assert people.note(ref, actor="alice", body="holding this one").applied
            return super()._commit(decision, command)

    desk = RejectedMeanwhile(store, AGENT)
    ref, digest = approved(desk, people, "k-race")
    begun = desk.begin(ref, digest)
    assert not begun.ok and begun.reasons == ("stale_version",), begun
    assert people.item(ref).state.value == "approved"  # type: ignore[union-attr]


def test_a_failure_recorded_on_a_forged_record_is_refused(
    opened: tuple[Store, Controller], lab: AgentLab
) -> None:
    """The agent records a failure on an item forged since begin_action: the step writes the
    integrity stop, and the answer says integrity_failed (not that the failure was recorded)."""
    from integrity.attacker import Attacker

    store, people = opened
    desk = AgentDesk(store, AGENT)
    ref, digest = approved(desk, people, "k-fail-forged")
    assert desk.begin(ref, digest).ok
    attacker = Attacker(lab.url)
    try:
        data = attacker.data(ref)
        data["evidence"] = {**data["evidence"], "data": {"forged": True}}
        attacker.put_data(ref, data)
    finally:
        attacker.close()
    answer = desk.record(ref, digest, "failed", message="timeout", retryable=True)
    assert not answer.ok and "integrity_failed" in answer.reasons, answer
    assert answer.data["written"] is True


def test_a_rejection_answers_only_while_the_item_rests_on_it(
    opened: tuple[Store, Controller],
) -> None:
    """A proposal sent back, then the agent stops the item for a person instead: waiting on
    it answers the stop (exception), not the earlier rejection."""
    store, people = opened
    desk = AgentDesk(store, AGENT)
    made = desk.propose(AUTOMATION, "k-rest", "restart", "x", {"n": 1}, {"seen": True})
    ref, digest = made.data["ref"], made.data["digest"]
    assert people.reject(ref, actor="alice", reason="not like this", send_back=True).applied
    assert desk.wait(ref, digest, 0).data["status"] == "rejected"
    assert desk.needs_eyes(AUTOMATION, "k-rest", "cannot tell", "sre").ok
    assert desk.wait(ref, None, 0).data["status"] == "exception"
    assert desk.wait(ref, digest, 0).data["status"] == "exception"


@pytest.mark.parametrize("asks_first", [True, False], ids=["begin_action", "record_outcome"])
def test_a_retry_after_a_failure_is_checked_again(
    opened: tuple[Store, Controller], asks_first: bool
) -> None:
    """The approved action failed (retryable) and its only approver lost the role before the
    agent tries again: the retry's acting step (begin_action, asked again) is refused and the
    item is back at awaiting_approval, as a worker's retry is; an outcome recorded without
    asking is refused the same way, never completed."""
    store, people = opened
    desk = AgentDesk(store, AGENT)
    people.add_actor("bob", ["approver"])
    made = desk.propose(AUTOMATION, "k-retry", "restart", "x", {"n": 1}, {"seen": True})
    ref, digest = made.data["ref"], made.data["digest"]
    assert people.approve(ref, proposal=digest, actor="bob").applied
    assert desk.begin(ref, digest).ok
    failed = desk.record(ref, digest, "failed", message="timeout", retryable=True)
    assert failed.ok and failed.data["state"] == "delivering", failed
    people.revoke_actor("bob", "approver")
    if asks_first:
        again = desk.begin(ref, digest)
    else:
        again = desk.record(ref, digest, "done", result={"restarted": True})
    assert not again.ok and again.data["state"] == "awaiting_approval", again
    assert "approvals_missing" in again.reasons or "actor_not_authorized" in again.reasons
    assert people.item(ref).state.value == "awaiting_approval"  # type: ignore[union-attr]


def test_a_retry_whose_approval_holds_goes_ahead(opened: tuple[Store, Controller]) -> None:
    """After a retryable failure, begin_action again answers the checked proposal (the item
    stays delivering) and the retry's outcome completes the item; while the first go holds
    the item, begin_action is still refused."""
    store, people = opened
    desk = AgentDesk(store, AGENT)
    ref, digest = approved(desk, people, "k-retry-ok")
    assert desk.begin(ref, digest).ok
    assert desk.begin(ref, digest).reasons == ("illegal_transition",)
    assert desk.record(ref, digest, "failed", message="timeout", retryable=True).ok
    again = desk.begin(ref, digest)
    assert again.ok and again.data["state"] == "delivering", again
    assert again.data["proposal"]["params"] == {"n": 1}
    done = desk.record(ref, digest, "done", result={"restarted": True})
    assert done.ok and done.data["state"] == "completed", done
