"""Stateful property tests: random command sequences against one item, invariants after each step.

The machine discovers an item, then interleaves claims (respecting the store's claim predicate),
worker outcomes (mostly under the live lease, sometimes from an intruder or with a stale token),
every operator command from actors known and unknown, with and without roles, changes to the
actor registry, clock advances and random digests. After every step it checks:

(a) only people's commands listed in the table for a stop state move an item out of it;
(b) refused and zero-write decisions carry no ``after``/``event`` and leave the item unchanged;
(c) each applied event is hash-chained to the previous one and ``verify_item`` finds nothing;
(d) ``attempts <= max_attempts`` in work states;
(e) the version grows by exactly one per applied decision (and per claim).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from budget import examples
from stopline.core import work
from stopline.core.commands import (
    Acknowledge,
    ActorCommand,
    Approve,
    Bind,
    Close,
    Command,
    Delivered,
    Discover,
    Edit,
    Execute,
    Expire,
    Failure,
    Finalize,
    Intent,
    NeedsEyes,
    Observe,
    Observed,
    Propose,
    Publish,
    QAResult,
    ReadBack,
    Reconcile,
    Reinspect,
    Reject,
    Report,
    Resolve,
    Resume,
    Review,
    Revise,
    Stage,
)
from stopline.core.decide import decide
from stopline.core.decision import Decision, Outcome
from stopline.core.policy import PUBLISH, DeliveryPolicy, RetryPolicy
from stopline.core.records import Event, Item
from stopline.core.states import State
from stopline.core.step import Context
from stopline.core.transitions import By, Cmd, lookup
from stopline.core.verify import verify_item

from .helpers import AUTOMATION_PROPOSER, Clock, Harness, actors, art, claim, claimable, policy

S = State
PEOPLE = {By.OPERATOR, By.APPROVER, By.REVIEWER}
ITEM = "auto-k1"

POLICIES = [
    policy(),
    policy(approvals=2),
    policy(approvals=0),
    policy(retry=RetryPolicy(max_attempts=1, resume_cap=2)),
    policy(max_evidence_age=60, separation_of_duties=False),
    policy(delivery=DeliveryPolicy(mode=PUBLISH)),
    policy(delivery=DeliveryPolicy(revisable=False), retry=RetryPolicy(max_attempts=2)),
]
ACTOR_NAMES = [
    "olivia",
    "alice",
    "bob",
    "carol",
    "nora",
    "pat",
    "gone",
    "stranger",
    "",
    AUTOMATION_PROPOSER,
]
WORKERS = ["w1", "w2"]
KEYS = ["a", "b"]
BODIES = ["v1", "v2", "v3"]
DIGESTS = ["0" * 64, "f" * 64, "junk"]
WORKER_KINDS = [
    *("observe", "propose", "report", "eyes", "execute"),
    *("stage", "intent", "bind", "delivered", "readback"),
]
PERSON_KINDS = [
    *("approve", "approve", "reject", "edit", "reinspect", "acknowledge", "resolve"),
    *("resume", "close", "finalize", "revise", "review", "publish", "reconcile"),
]
STARTS = [
    S.OBSERVING,
    S.OBSERVING,
    S.CLASSIFIED,
    S.AWAITING_APPROVAL,
    S.APPROVED,
    S.PENDING_READBACK,
    S.EXCEPTION,
    S.EXHAUSTED,
    S.COMPLETED,
    S.REVISION_PREPARED,
    S.REVISION_FAILED,
]
STATES_SEEN: Counter[State] = Counter()  # how many runs reached each state (for tuning)


class ItemMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.policy = POLICIES[0]
        self.actors = actors()
        self.item: Item | None = None
        self.events: list[Event] = []
        self.applied = 0
        self.seen_states: set[State] = set()

    # --- the store ---------------------------------------------------------------------------

    def ctx(self) -> Context:
        return Context(self.clock.now, self.policy, self.actors)

    def run(self, command: Command) -> Decision:
        before = self.item
        decision = decide(before, command, self.ctx())
        assert decision.outcome in Outcome
        if decision.outcome is Outcome.REFUSED:
            assert decision.reasons, "a refusal names at least one reason"
        if decision.outcome is not Outcome.APPLIED:
            # (b) nothing to write: no new item, no event, no sequence; the item is untouched
            assert decision.after is None and decision.event is None
            assert decision.sequence is None
            assert decision.before is before
            assert decision.state is (None if before is None else before.state)
            return decision
        after, event = decision.after, decision.event
        assert after is not None and event is not None
        # (a) out of a stop state only by people's commands the table lists for that state
        if before is not None and before.state.is_stop:
            row = lookup(before.state, Cmd(event.command))
            assert row is not None and row.by in PEOPLE, (before.state, event.command)
            assert isinstance(command, ActorCommand), command
            assert after.state in row.targets
        # (c) one event, chained to the last, and the whole history replays cleanly
        assert event.seq == len(self.events) + 1 == after.seq
        assert event.prev_hash == (self.events[-1].hash if self.events else "")
        assert event.hash == event.computed_hash() == after.head
        assert event.from_state == (None if before is None else before.state)
        assert event.to_state == after.state == decision.state
        # (e) exactly one version per applied decision
        assert after.version == (1 if before is None else before.version + 1)
        self.events.append(event)
        self.item = after
        self.applied += 1
        self.seen_states.add(after.state)
        assert verify_item(after, self.events) == []
        return decision

    # --- helpers -----------------------------------------------------------------------------

    def records(self) -> dict[str, Any]:
        assert self.item is not None
        return {r["key"]: r for r in self.item.doc("artifacts") or ()}

    def worker_fields(self, data: st.DataObject) -> dict[str, Any]:
        assert self.item is not None
        how = data.draw(st.sampled_from(["own"] * 12 + ["intruder", "stale"]), label="lease")
        owner = self.item.lease_owner or "w1"
        token = self.item.lease_token
        if how == "intruder":
            return {"worker": "intruder", "token": token}
        if how == "stale":
            return {"worker": owner, "token": token - 1}
        return {"worker": owner, "token": token}

    def natural_worker_command(self, data: st.DataObject, wc: dict[str, Any]) -> Command:
        """The step a sane worker would commit in the item's current state."""
        item = self.item
        assert item is not None
        state = item.state
        records = self.records()
        if state is S.OBSERVING:
            ev = {"cpu": data.draw(st.integers(0, 100), label="cpu")}
            return Observe(**wc, evidence=ev, observed_at=self.clock.now)
        if state is S.CLASSIFIED:
            kind = data.draw(st.sampled_from(["propose", "propose", "report", "eyes"]))
            if kind == "propose":
                params = {"grace": data.draw(st.integers(0, 3), label="grace")}
                return Propose(**wc, action="restart", target="web", params=params)
            if kind == "report":
                return Report(**wc, report={"ok": True})
            return NeedsEyes(**wc, owner="ops", why="unsure")
        if state is S.APPROVED:
            return Execute(**wc)
        if state in (S.DELIVERING, S.REVISION_PREPARED):
            revision = item.doc("revision") or {}
            staged = item.doc("staged") if state is S.DELIVERING else revision.get("staged")
            if not staged:
                keys = data.draw(st.lists(st.sampled_from(KEYS), unique=True), label="keys")
                if state is S.REVISION_PREPARED:
                    keys = sorted(revision.get("scope", ()))
                arts = tuple(art(k, data.draw(st.sampled_from(BODIES), label="body")) for k in keys)
                qa = {a.key: QAResult(True) for a in arts}
                if data.draw(st.integers(0, 9), label="qa-fail") == 0 and arts:
                    qa[arts[0].key] = QAResult(False)
                return Stage(**wc, artifacts=arts, qa=qa)
            op = "update" if state is S.REVISION_PREPARED else None
            scope = revision.get("scope", ()) if state is S.REVISION_PREPARED else sorted(records)
            for key in scope:
                r = records[key]
                if state is S.REVISION_PREPARED and r.get("last_op") == "update":
                    continue
                if state is S.DELIVERING and r["remote_id"] and r.get("last_op"):
                    continue
                operation = op or ("update" if r["remote_id"] else "create")
                if r.get("intent") is None or (
                    state is S.REVISION_PREPARED and r["intent"]["operation"] != "update"
                ):
                    return Intent(**wc, key=key, operation=operation, idempotency_key=f"ik-{key}")
                remote = r["remote_id"] or f"remote-{key}"
                return Bind(
                    **wc, key=key, operation=operation, remote_id=remote, remote_version="1"
                )
            if state is S.DELIVERING:
                return Delivered(**wc)
            return ReadBack(**wc, readbacks=self.readbacks(data, scope))
        if state is S.PENDING_READBACK:
            return ReadBack(**wc, readbacks=self.readbacks(data, sorted(records)))
        return Execute(**wc)  # any other state: refused, which is checked too

    def readbacks(self, data: st.DataObject, keys: Any) -> dict[str, Observed]:
        records = self.records()
        out = {}
        for key in keys:
            how = data.draw(st.sampled_from(["match"] * 6 + ["mismatch", "missing"]), label="rb")
            if how == "match":
                out[key] = Observed(records[key]["content_hash"], "v2")
            elif how == "mismatch":
                out[key] = Observed("9" * 64, "v2", ("body",))
            else:
                out[key] = Observed(None)
        return out

    def random_worker_command(self, data: st.DataObject, wc: dict[str, Any]) -> Command:
        kind = data.draw(
            st.sampled_from(WORKER_KINDS),
            label="worker-kind",
        )
        key = data.draw(st.sampled_from([*KEYS, "zz"]), label="key")
        op = data.draw(st.sampled_from(["create", "update", "found"]), label="op")
        commands: dict[str, Command] = {
            "observe": Observe(**wc, evidence={"x": 1}, observed_at=self.clock.now),
            "propose": Propose(
                **wc, action=data.draw(st.sampled_from(["", "restart"])), target="t", params={}
            ),
            "report": Report(**wc, report={}),
            "eyes": NeedsEyes(**wc, owner=data.draw(st.sampled_from(["", "ops"])), why="w"),
            "execute": Execute(**wc),
            "stage": Stage(**wc, artifacts=(art(key, "v9"),), qa={key: QAResult(True)}),
            "intent": Intent(**wc, key=key, operation=op, idempotency_key="k"),
            "bind": Bind(**wc, key=key, operation=op, remote_id=f"r-{key}", remote_version="1"),
            "delivered": Delivered(**wc),
            "readback": ReadBack(**wc, readbacks=self.readbacks(data, sorted(self.records()))),
        }
        return commands[kind]

    # --- rules -------------------------------------------------------------------------------

    @initialize(index=st.integers(0, len(POLICIES) - 1), start=st.sampled_from(STARTS))
    def start(self, index: int, start: State = S.OBSERVING) -> None:
        """Discover the item, then (for deeper runs) walk it to ``start`` by real commands."""
        self.policy = POLICIES[index]
        rule = self.policy.approval.default
        if rule.approvals == 0 and start not in (S.OBSERVING, S.CLASSIFIED):
            start = S.OBSERVING
        if not self.policy.delivery.revisable and start.value.startswith("revision"):
            start = S.COMPLETED
        h = Harness(policy=self.policy, actors=self.actors, clock=self.clock, item_id=ITEM)
        h.to(start)
        for event in h.events:  # replay the walk through this machine's own checks
            self.events.append(event)
        self.item = h.it
        self.applied = len(self.events)
        assert verify_item(self.item, self.events) == []

    @rule()
    def rediscover(self) -> None:
        before = self.item
        decision = self.run(Discover(ITEM, "auto", "k1", {"n": 2}))
        assert decision.outcome is Outcome.ZERO_WRITE and self.item is before

    @rule(seconds=st.sampled_from([0.5, 0.5, 1, 2, 5, 10, 31, 61, 700, 4000]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule(worker=st.sampled_from(WORKERS))
    def claim(self, worker: str) -> None:
        assert self.item is not None
        blocked = claimable(self.item, self.clock.now)
        assert work.claimable(self.item, self.clock.now) == (not blocked)  # the core agrees
        if blocked:
            return
        before = self.item
        self.item = claim(before, worker, self.clock.now)
        assert self.item.version == before.version + 1  # (e) a claim is one write too

    def work_step(self, data: st.DataObject) -> None:
        """Claim when the store would, then commit one step (mostly the sane one)."""
        assert self.item is not None
        if not claimable(self.item, self.clock.now):
            self.claim(data.draw(st.sampled_from(WORKERS), label="worker"))
        if self.item.lease_owner is None:
            return
        wc = self.worker_fields(data)
        roll = data.draw(st.integers(0, 9), label="roll")
        if roll == 0:
            retryable = data.draw(st.sampled_from([True, True, True, False]), label="retryable")
            jitter = data.draw(st.floats(0, 1), label="jitter")
            self.run(
                Failure(
                    **wc,
                    failure_class="net",
                    message="down",
                    retryable=retryable,
                    jitter_sample=jitter,
                )
            )
        elif roll == 1:
            self.run(self.random_worker_command(data, wc))
        else:
            self.run(self.natural_worker_command(data, wc))

    @rule(data=st.data())
    def work_1(self, data: st.DataObject) -> None:
        self.work_step(data)

    @rule(data=st.data())
    def work_2(self, data: st.DataObject) -> None:
        self.work_step(data)

    @rule(data=st.data())
    def work_3(self, data: st.DataObject) -> None:
        self.work_step(data)

    @rule()
    def sweep(self) -> None:
        self.run(Expire())

    def natural_person_command(self, data: st.DataObject) -> Command | None:
        """What a person would sensibly do with the item now (mostly authorized)."""
        item = self.item
        assert item is not None
        pick = lambda options: data.draw(st.sampled_from(options), label="natural")  # noqa: E731
        approver = pick(["alice", "bob", "carol", "alice", "bob", "carol", "nora", "gone"])
        operator = pick(["olivia", "carol", "olivia", "carol", "pat", "alice", "stranger"])
        proposal = item.doc("proposal")
        revision = item.doc("revision") or {}
        records = self.records()
        state = item.state
        if state is S.AWAITING_APPROVAL and proposal is not None:
            kind = pick(["approve"] * 6 + ["edit", "reject", "return", "reinspect"])
            return {
                "approve": Approve(approver, proposal["digest"]),
                "edit": Edit(operator, {"grace": data.draw(st.integers(0, 3), label="g")}),
                "reject": Reject(approver, "no"),
                "return": Reject(operator, "redo", send_back=True),
                "reinspect": Reinspect(operator, "fresh evidence"),
            }[kind]
        if state is S.READY_FOR_REVIEW:
            return pick([Acknowledge(operator), Reinspect(operator, "again"), Close(operator, "x")])
        if state is S.EXCEPTION:
            key = pick(sorted(records) or ["a"])
            content = records.get(key, {}).get("content_hash") or "3" * 64
            return pick(
                [
                    Resolve(operator, "fixed", {"hint": 1}),
                    Reinspect(operator, "again"),
                    Close(operator, "give up"),
                    Reconcile(operator, key, Observed(content, "v4"), remote_id=f"remote-{key}"),
                ]
            )
        if state is S.EXHAUSTED:
            attempts = pick([None, None, 1, 2, 5])
            return pick([Resume(operator, "retry", attempts)] * 3 + [Close(operator, "x")])
        if state is S.REVISION_FAILED:
            key = pick(list(revision.get("scope", ())) or ["a"])
            content = records.get(key, {}).get("content_hash") or "3" * 64
            same = Revise(operator, revision.get("reason", ""), tuple(revision.get("scope", ())))
            return pick(
                [
                    same,
                    same,
                    Revise(operator, "another", tuple(revision.get("scope", ()))),
                    Reconcile(operator, key, Observed(content, "v4"), remote_id=f"remote-{key}"),
                    Close(operator, "stop"),
                ]
            )
        if state in (S.COMPLETED, S.REVISION_COMPLETED):
            packet = item.doc("review_packet") or {"digest": "x"}
            keys = data.draw(
                st.lists(st.sampled_from(sorted(records) or ["a"]), min_size=1, unique=True),
                label="scope",
            )
            return pick(
                [
                    Revise(operator, "clearer", tuple(keys)),
                    Revise(operator, "clearer", tuple(keys)),
                    Review(operator, packet["digest"], pick(["approve", "reject"]), "r"),
                    Publish(pick(["pat", "olivia"]), packet["digest"]),
                    Finalize(),
                ]
            )
        return None

    @rule(data=st.data())
    def person_natural(self, data: st.DataObject) -> None:
        command = self.natural_person_command(data)
        if command is not None:
            self.run(command)

    @rule(data=st.data())
    def person_natural_2(self, data: st.DataObject) -> None:
        self.person_natural(data)

    @rule(data=st.data())
    def person(self, data: st.DataObject) -> None:
        assert self.item is not None
        actor = data.draw(st.sampled_from(ACTOR_NAMES), label="actor")
        reason = data.draw(st.sampled_from(["because", "because", "", " "]), label="reason")
        proposal = self.item.doc("proposal")
        packet = self.item.doc("review_packet")
        digest = data.draw(
            st.sampled_from([proposal["digest"]] * 3 + DIGESTS if proposal else DIGESTS),
            label="digest",
        )
        packet_digest = data.draw(
            st.sampled_from([packet["digest"]] * 3 + DIGESTS if packet else DIGESTS),
            label="packet",
        )
        keys = tuple(data.draw(st.lists(st.sampled_from([*KEYS, "zz"]), max_size=3), label="ks"))
        records = self.records()
        key = data.draw(st.sampled_from([*KEYS, "zz"]), label="key")
        found_how = data.draw(st.sampled_from(["current", "old", "other", "none"]), label="found")
        found: Observed | None = None
        if found_how == "current" and key in records:
            found = Observed(records[key]["content_hash"], "v7")
        elif found_how == "old":
            superseded = (self.item.doc("revision") or {}).get("superseded", {})
            found = Observed(superseded.get(key, {}).get("content_hash") or "1" * 64, "v7")
        elif found_how == "other":
            found = Observed("2" * 64, "v7")
        remote = data.draw(st.sampled_from([f"remote-{key}", "elsewhere", ""]), label="remote")
        kind = data.draw(
            st.sampled_from(PERSON_KINDS),
            label="person-kind",
        )
        command: Command = {
            "approve": lambda: Approve(actor, digest),
            "reject": lambda: Reject(actor, reason, send_back=data.draw(st.booleans())),
            "edit": lambda: Edit(actor, {"grace": data.draw(st.integers(0, 3))}),
            "reinspect": lambda: Reinspect(actor, reason),
            "acknowledge": lambda: Acknowledge(actor, reason),
            "resolve": lambda: Resolve(actor, reason, {"fix": True}),
            "resume": lambda: Resume(actor, reason, data.draw(st.sampled_from([None, 0, 1, 3]))),
            "close": lambda: Close(actor, reason),
            "finalize": lambda: Finalize(),
            "revise": lambda: Revise(actor, reason, keys),
            "review": lambda: Review(
                actor,
                packet_digest,
                data.draw(st.sampled_from(["approve", "reject", "meh"])),
                reason,
            ),
            "publish": lambda: Publish(actor, packet_digest),
            "reconcile": lambda: Reconcile(actor, key, found, remote_id=remote),
        }[kind]()
        decision = self.run(command)
        if kind == "finalize":
            if self.item.state in (S.COMPLETED, S.REVISION_COMPLETED):
                assert decision.outcome is Outcome.ZERO_WRITE
                assert decision.reasons == ("already_completed",)
            else:
                assert decision.reasons == ("not_completed",)

    @rule(
        name=st.sampled_from(["alice", "bob", "carol", "olivia", "pat"]),
        change=st.sampled_from(["revoke", "strip", "restore"]),
    )
    def registry(self, name: str, change: str) -> None:
        current = self.actors[name]
        original = actors()[name]
        self.actors[name] = {
            "revoke": replace(current, active=False),
            "strip": replace(current, roles=frozenset()),
            "restore": original,
        }[change]

    # --- invariants ----------------------------------------------------------------------------

    def teardown(self) -> None:
        STATES_SEEN.update(self.seen_states)

    @invariant()
    def budget_holds_in_work_states(self) -> None:
        # (d) claims respect the predicate, so a work step never counts past its budget
        if self.item is not None and self.item.state.is_work:
            assert 0 <= self.item.attempts <= self.item.max_attempts

    @invariant()
    def only_work_holds_a_lease(self) -> None:
        if self.item is not None and not self.item.state.is_work:
            assert self.item.lease_owner is None and self.item.lease_expires_at is None

    @invariant()
    def completion_is_proven(self) -> None:
        """A delivered item's objects are bound and read back, and its packet says so."""
        item = self.item
        if item is None or item.state not in (S.COMPLETED, S.REVISION_COMPLETED):
            return
        packet = item.doc("review_packet")
        assert packet is not None and packet["void"] is False
        assert packet["delivery_seq"] == (item.doc("delivery_seq") or 0)
        records = self.records()
        for record in records.values():
            assert record["remote_id"] and record["readback_hash"] == record["content_hash"]
        assert [(a["key"], a["content_hash"], a["remote_id"]) for a in packet["artifacts"]] == [
            (k, r["content_hash"], r["remote_id"]) for k, r in sorted(records.items())
        ]
        if item.state is S.REVISION_COMPLETED:
            revision = item.doc("revision")
            assert revision["state"] == "revision_completed"
            for key in revision["scope"]:
                old, new = revision["superseded"][key], records[key]
                assert new["content_hash"] != old["content_hash"]
                assert new["qa_hash"] != old["qa_hash"]
                assert new["remote_id"] == old["remote_id"] and new["last_op"] == "update"

    @invariant()
    def history_is_sound(self) -> None:
        if self.item is not None:
            assert self.item.seq == len(self.events) == self.applied
            if self.item.lease_owner is None:
                assert self.item.lease_expires_at is None


def _settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


class FastItemMachine(ItemMachine):
    pass


FastItemMachine.TestCase.settings = _settings(examples(200), 60)
test_item_machine = FastItemMachine.TestCase


class SlowItemMachine(ItemMachine):
    pass


SlowItemMachine.TestCase.settings = _settings(500, 120)
test_item_machine_slow = pytest.mark.slow(SlowItemMachine.TestCase)


def test_the_machine_reaches_deep_states() -> None:
    """A scripted run through the machine reaches completed and a revision (not vacuous)."""
    m = ItemMachine()
    m.start(0)
    seen = set()
    for step in range(400):
        item = m.item
        assert item is not None
        seen.add(item.state)
        if item.state is S.REVISION_COMPLETED:
            break
        if item.state is S.AWAITING_APPROVAL:
            m.run(Approve("alice", item.doc("proposal")["digest"]))
            continue
        if item.state is S.COMPLETED:
            m.run(Revise("olivia", "again", ("a",)))
            continue
        if item.state.is_work and not claimable(item, m.clock.now):
            m.claim("w1")
        item = m.item
        assert item is not None
        wc = {"worker": item.lease_owner or "w1", "token": item.lease_token}
        m.run(_scripted(m, item, wc, step))
    assert {S.COMPLETED, S.REVISION_PREPARED, S.REVISION_COMPLETED} <= seen


def _scripted(m: ItemMachine, item: Item, wc: dict[str, Any], step: int) -> Command:
    records = m.records()
    if item.state is S.OBSERVING:
        return Observe(**wc, evidence={"cpu": 1}, observed_at=m.clock.now)
    if item.state is S.CLASSIFIED:
        return Propose(**wc, action="restart", target="t", params={})
    if item.state is S.APPROVED:
        return Execute(**wc)
    if item.state is S.PENDING_READBACK:
        return ReadBack(
            **wc, readbacks={k: Observed(r["content_hash"]) for k, r in records.items()}
        )
    revision = item.doc("revision") or {}
    staged = item.doc("staged") if item.state is S.DELIVERING else revision.get("staged")
    if not staged:
        body = "v1" if item.state is S.DELIVERING else f"v{step}"
        return Stage(**wc, artifacts=(art("a", body),), qa={"a": QAResult(True)})
    r = records["a"]
    op = "update" if item.state is S.REVISION_PREPARED else "create"
    if item.state is S.DELIVERING and r["remote_id"]:
        return Delivered(**wc)
    if item.state is S.REVISION_PREPARED and r.get("last_op") == "update":
        return ReadBack(**wc, readbacks={"a": Observed(r["content_hash"])})
    if r.get("intent") is None or r["intent"]["operation"] != op:
        return Intent(**wc, key="a", operation=op, idempotency_key="k")
    return Bind(**wc, key="a", operation=op, remote_id="remote-a", remote_version="1")


def test_claim_emulation_keeps_a_lease_for_thirty_seconds() -> None:
    """The claim the machine uses leases for 30 s, like the store's default."""
    m = ItemMachine()
    m.start(0)
    m.claim("w1")
    assert m.item is not None and m.item.lease_expires_at == m.clock.now + timedelta(seconds=30)
