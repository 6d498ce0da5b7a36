"""A signed approval is bound to one proposal *in one place of the item's history*.

A proposal's digest covers what it proposes and the evidence it rests on. Before 2026-12-07
it covered nothing else, so the same proposal made again on the same item (the same evidence,
observed at the same time, proposed again after a ``reinspect``) had the same digest, and the
people's signed approvals of the first one were good for the second: a database writer with no
key re-recorded them and the worker, in signed mode, ran the payment a second time on
approvals given once. Each test runs on SQLite and PostgreSQL with real worker processes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from stopline.controller import utcnow
from stopline.core.commands import Approve, Observe, Propose, Reinspect
from stopline.core.decide import decide
from stopline.core.frozen import FrozenDict, freeze, thaw
from stopline.core.guard import integrity_failed
from stopline.core.integrity import Finding, item_seal
from stopline.core.records import Actor, Event
from stopline.core.step import Context
from stopline.store import Store

from .signedlab import SignedLab, findings_about
from .test_attacks import signed_approval


def _apply(store: Store, decision: Any) -> None:
    assert decision.after is not None, decision
    assert store.apply(decision), decision


def copied(decision: Any, proposal: Any) -> Any:
    """``decision`` (a propose) made to record ``proposal`` instead, event and seal made to
    match: the earlier proposal copied in whole, the place it named included."""
    after = replace(decision.after, data=FrozenDict({**decision.after.data}), head="")
    after = replace(after, data=FrozenDict({**after.data, "proposal": freeze(proposal)}))
    fields = {name: getattr(decision.event, name) for name in decision.event.body()}
    digests = {**decision.event.digests, "proposal": proposal["digest"], "seal": item_seal(after)}
    fields["digests"] = freeze(digests)
    event = Event.sealed(**fields)
    return replace(decision, after=replace(after, head=event.hash), event=event)


def replay_after_reinspect(lab: SignedLab, evidence: dict[str, Any], *, copy: bool = False) -> str:
    """What a database writer does with stopline's own code and no key: the item (stopped
    after its payment ran) is reinspected, observed again with the same evidence and time,
    proposed again, and the approvals alice and bob signed for the first proposal are recorded
    on the second. Returns the second proposal's digest."""
    now = utcnow()
    people = {n: Actor(n, frozenset({"approver", "operator"}), True) for n in ("alice", "bob")}
    with lab.store() as store:
        policy = store.policy("pay")
        ctx = Context(now, policy, people)
        item = lab.item()
        first = item.doc("proposal")
        signatures = {a["actor"]: a["attestation"] for a in first["approvals"]}
        # the worker's stop (a worker's event: nothing signs it)
        finding = Finding("item", item.id, "delivery", "needs_eyes", "forged")
        _apply(store, integrity_failed(item, ctx, "forger", [finding]))
        _apply(store, decide(lab.item(), Reinspect("alice", "look again"), ctx))
        claimed = store.claim("forger", now, 30.0, ["pay"])
        assert claimed is not None
        observe = Observe(
            "forger",
            claimed.lease_token,
            evidence["data"],
            datetime_of(evidence["observed_at"]),
        )
        _apply(store, decide(claimed, observe, ctx))
        claimed = store.claim("forger", now, 30.0, ["pay"])
        assert claimed is not None
        propose = Propose(
            "forger", claimed.lease_token, first["action"], first["target"], first["params"]
        )
        made = decide(claimed, propose, ctx)
        _apply(store, copied(made, {**thaw(first), "approvals": []}) if copy else made)
        digest = str(lab.item().doc("proposal")["digest"])
        for who in ("alice", "bob"):
            replay = Approve(who, digest, attestation=signatures[who])
            signed_ctx = Context(now, policy, people, attestation=signatures[who])
            _apply(store, decide(lab.item(), replay, signed_ctx))
    return digest


def datetime_of(text: str) -> Any:
    from stopline.core.canonical import parse_time

    return parse_time(text)


@pytest.mark.parametrize("copy", [False, True], ids=["made_again", "copied"])
def test_signed_approvals_of_a_proposal_made_again_do_not_run_it_again(
    make_lab: Callable[..., SignedLab], copy: bool
) -> None:
    """Made again, the proposal names another place (its digest is new, alice's and bob's
    signatures are of another proposal); copied whole from its first place, it is not where its
    history made it (``proposal_misplaced``). Either way the payment does not run again."""
    lab = make_lab()
    signed_approval(lab, "alice")
    assert signed_approval(lab, "bob").state.value == "approved"
    first = lab.digest()
    evidence = dict(lab.item().doc("evidence"))
    # the worker runs the payment and dies right after (as after SIGKILL)
    lab.work(ok=(137,), env={"STOPLINE_CRASH_AT": "staged"})
    assert len(lab.executed()) == 1
    second = replay_after_reinspect(lab, evidence, copy=copy)
    assert (second == first) is copy
    assert lab.item().state.value == "approved"
    lab.work()
    assert len(lab.executed()) == 1, f"paid again on approvals given once ({first} / {second})"
    assert lab.item().state.value == "exception"
    report = lab.verify()
    assert not report["ok"]
    reasons = {f["reason"] for f in findings_about(report, lab.item().id)}
    assert reasons & ({"proposal_misplaced"} if copy else {"signature_invalid"}), reasons
