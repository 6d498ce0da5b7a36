"""decide() at its entry, the decision it returns and the commands it takes: what reaches a
rule only in a checked form (the declared types, a canonical form), what a refusal names, what
the attestation of a person's command is recorded with, and what an idempotency key binds.

Each test holds a rule that a mutant of ``core/decide.py``, ``core/decision.py`` or
``core/commands.py`` dropped while every other core test still passed."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import pytest

from stopline.core.authorship import HUMAN, Author
from stopline.core.commands import (
    Acknowledge,
    Approve,
    Bind,
    Close,
    Command,
    Discover,
    Edit,
    Execute,
    Failure,
    Intent,
    Observe,
    Observed,
    Publish,
    QAResult,
    ReadBack,
    Reconcile,
    Reinspect,
    Reject,
    Resolve,
    Resume,
    Review,
)
from stopline.core.decide import HANDLERS, OUTSIDE_INPUT, decide
from stopline.core.decision import Outcome
from stopline.core.policy import PUBLISH, DeliveryPolicy, Policy
from stopline.core.reasons import Reason
from stopline.core.states import State
from stopline.core.step import Context
from stopline.core.transitions import Cmd

from .helpers import T0, Harness, art, policy, unchanged

S = State
SIGNED = {"statement": "approve", "signature": "c2lnbmVk"}


# --- the declared types: refused before any rule reads them --------------------------------------


@pytest.mark.parametrize(
    ("walk", "command"),
    [
        (Harness.to_awaiting, Reject("alice", reason=None)),  # type: ignore[arg-type]
        (Harness.to_awaiting, Close("olivia", reason="r", integrity="0")),  # type: ignore[arg-type]
        (Harness.to_awaiting, Close("olivia", reason=["r"])),  # type: ignore[arg-type]
        (Harness.to_exhausted, Resume("olivia", "more", attempts="5")),  # type: ignore[arg-type]
    ],
    ids=["reason-none", "integrity-text", "reason-list", "attempts-text"],
)
def test_a_person_s_command_of_the_wrong_types_is_refused_invalid_input(
    h: Harness, walk: Any, command: Command
) -> None:
    """A library caller can build a command the command table would never let through; the
    core refuses it invalid_input and writes nothing, instead of failing inside a rule."""
    walk(h)
    h.refused(command, Reason.INVALID_INPUT)


def test_a_worker_s_flag_of_the_wrong_type_is_not_read_as_true(h: Harness) -> None:
    """``retryable="no"`` is text, not a flag: refused, never taken for a retryable failure."""
    h.discover()
    h.claim()
    before = h.it
    d = h.apply(
        Failure(**h.lease(), failure_class="net", message="down", retryable="no")  # type: ignore[arg-type]
    )
    assert d.reasons == (Reason.INVALID_INPUT,) and unchanged(before, d)


def test_a_malformed_discovery_is_refused_naming_the_would_be_item() -> None:
    """A discovery with a key of the wrong type names the item it would have made."""
    command = Discover("auto-k9", "auto", 9)  # type: ignore[arg-type]
    d = decide(None, command, Context(T0, Policy()))
    assert (d.outcome, d.reasons, d.item_id) == (Outcome.REFUSED, ("invalid_input",), "auto-k9")
    assert d.after is None and d.event is None


# --- a canonical form: every field of outside input ------------------------------------------------


class NoForm:
    """A value a hook might return whose ``to_plain`` fails with a plain ValueError."""

    def to_plain(self) -> Any:
        raise ValueError("no plain form")


@pytest.mark.parametrize(
    "value",
    [QAResult, NoForm()],  # a class: its to_plain called unbound raises TypeError
    ids=["type-error", "value-error"],
)
def test_evidence_whose_plain_form_fails_is_refused_never_raised(h: Harness, value: Any) -> None:
    """Whatever a value's own conversion raises, the command is refused invalid_input."""
    h.discover()
    h.claim()
    h.refused(Observe(**h.lease(), evidence={"v": value}, observed_at=h.now), "invalid_input")


def test_edited_parameters_without_a_canonical_form_are_refused(h: Harness) -> None:
    """An operator's edit carries outside input: a set or NaN in it is invalid_input."""
    h.to_awaiting()
    h.refused(Edit("olivia", {"hosts": {"a", "b"}}), "invalid_input")
    h.refused(Edit("olivia", {"grace": math.nan}), "invalid_input")


def test_corrective_input_without_a_canonical_form_is_refused(h: Harness) -> None:
    """A resolve's corrective input is outside input too: refused, the exception stays."""
    h.to_exception()
    h.refused(Resolve("olivia", "fixed", {"ratio": math.inf}), "invalid_input")
    h.refused(Resolve("olivia", "fixed", {1: "x"}), "invalid_input")  # type: ignore[dict-item]
    assert h.state is S.EXCEPTION


# --- what a person's command is recorded with --------------------------------------------------


def test_an_attestation_is_kept_in_the_event_and_in_the_release(h: Harness) -> None:
    """In signed mode the signed record of a person's command is kept with its event, and
    with the release of a stopped item a worker checks before it runs the item again."""
    h.to_awaiting()
    d = h.ok(Approve("alice", h.digest(), attestation=SIGNED), S.APPROVED)
    assert d.event is not None and d.event.detail["attestation"] == SIGNED
    h2 = Harness()
    h2.to_exception()
    d = h2.ok(Resolve("olivia", "fixed", {"fix": 1}, attestation=SIGNED), S.OBSERVING)
    assert d.event is not None and d.event.detail["attestation"] == SIGNED
    assert h2.it.doc("release")["attestation"] == SIGNED


def test_an_unsigned_command_records_no_attestation(h: Harness) -> None:
    h.to_awaiting()
    d = h.ok(Approve("alice", h.digest()), S.APPROVED)
    assert d.event is not None and "attestation" not in d.event.detail


# --- the decision ---------------------------------------------------------------------------------


def test_a_refusal_names_the_item_its_state_and_each_reason_once(h: Harness) -> None:
    """A resume with no reason and no attempts fails two rules for the same reason code: the
    decision names it once, with the item and its state, and writes nothing."""
    h.to_exhausted()
    before = h.it
    d = h.apply(Resume("olivia", "", attempts=0))
    assert d.reasons == (Reason.INVALID_INPUT,) and unchanged(before, d)
    assert d.to_plain() == {
        "decision": "refused",
        "reasons": ["invalid_input"],
        "item": h.item_id,
        "state": "exhausted",
        "sequence": None,
    }


# --- what an idempotency key binds (``to_plain``) ------------------------------------------------


def test_every_command_has_a_name_of_its_own() -> None:
    """A key bound to one command never matches another: each names itself differently."""
    kinds: list[type[Command]] = [*HANDLERS, Discover]
    names = [kind.name for kind in kinds]
    assert len(set(names)) == len(names), names
    assert Execute.name == Cmd.EXECUTE and Approve.name == Cmd.APPROVE


def test_a_key_binds_the_command_by_its_name() -> None:
    """Two commands with the same fields (an actor and a reason) differ by their name."""
    reinspect, acknowledge = Reinspect("olivia", "read"), Acknowledge("olivia", "read")
    assert reinspect.to_plain() == {"command": "reinspect", "actor": "olivia", "reason": "read"}
    assert acknowledge.to_plain() == {**reinspect.to_plain(), "command": "acknowledge"}


def test_a_key_does_not_bind_a_signature() -> None:
    """A signature is fresh on every try: a retried command under the same key still matches."""
    plain = Approve("alice", "d" * 64, attestation=SIGNED).to_plain()
    assert plain == Approve("alice", "d" * 64).to_plain()
    assert plain == {"command": "approve", "actor": "alice", "digest": "d" * 64}


def test_a_key_binds_a_declared_author_but_not_a_person() -> None:
    """An AI author is part of what a key binds; a person, declared or by default, is not, so
    keys bound before authors were kept still match."""
    ai = Author("ai", "helper", "family-1")
    assert Reject("alice", "no", author=ai).to_plain()["author"] == ai.to_plain()
    plain = {"command": "reject", "actor": "alice", "reason": "no", "send_back": False}
    assert Reject("alice", "no").to_plain() == {**plain, "digest": None}
    assert Reject("alice", "no", author=HUMAN).to_plain() == {**plain, "digest": None}


# --- text with no canonical form, in every field outside input reaches ----------------------------
#
# ``OUTSIDE_INPUT`` (``core/decide.py``) lists the fields through which input from outside
# (hooks, targets, people, a library caller) reaches a record; a value with no canonical form in
# one of them is refused ``invalid_input``. Fields missing from it (a discovered key, an
# acknowledgement's reason, a publication's signal, an idempotency key, a remote id or version,
# read-back text) made decide() raise CanonicalError instead: nothing was written, but the caller
# got an exception, not a decision.

LONE = "x\ud800"


def lone_acknowledge(h: Harness) -> Command:
    h.to_ready_for_review()
    return Acknowledge("olivia", LONE)


def lone_publish(h: Harness) -> Command:
    h.policy = policy(delivery=DeliveryPolicy(mode=PUBLISH))
    h.to_completed()
    h.ok(Review("olivia", h.packet(), "approve"))
    return Publish("pat", h.packet(), signal=LONE)


def lone_delivering(h: Harness) -> None:
    h.to_approved()
    h.execute()
    h.claim()
    h.stage([art("a")])


def lone_intent(h: Harness) -> Command:
    lone_delivering(h)
    return Intent(**h.lease(), key="a", operation="create", idempotency_key=LONE)


def lone_bind(h: Harness) -> Command:
    lone_delivering(h)
    h.ok(Intent(**h.lease(), key="a", operation="create", idempotency_key="k"))
    return Bind(**h.lease(), key="a", operation="create", remote_id=LONE, remote_version="1")


def lone_readback(h: Harness) -> Command:
    h.to_pending_readback()
    h.claim()
    content = h.it.doc("artifacts")[0]["content_hash"]
    return ReadBack(**h.lease(), readbacks={"a": Observed(content, LONE)})


def lone_reconcile(h: Harness) -> Command:
    h.to_pending_readback()
    h.claim()
    h.ok(ReadBack(**h.lease(), readbacks={"a": Observed(None)}), S.EXCEPTION)
    content = h.it.doc("artifacts")[0]["content_hash"]
    return Reconcile("olivia", "a", Observed(content, "v9"), remote_id=LONE)


def lone_discover(h: Harness) -> Command:
    return Discover("auto-x", "auto", LONE)


@pytest.mark.parametrize(
    "make",
    [
        lone_acknowledge,
        lone_publish,
        lone_intent,
        lone_bind,
        lone_readback,
        lone_reconcile,
        lone_discover,
    ],
    ids=["acknowledge", "publish", "intent", "bind", "readback", "reconcile", "discover"],
)
def test_text_with_no_canonical_form_is_refused_not_raised(
    h: Harness, make: Callable[[Harness], Command]
) -> None:
    command = make(h)
    h.refused(command, Reason.INVALID_INPUT)


# What the core itself checks of a command (names, digests compared with the record, values it
# chose): every other field is outside input, and must be in OUTSIDE_INPUT.
CHECKED_BY_THE_CORE = {
    "worker",
    "token",
    "sweeper",
    "actor",
    "attestation",
    "author",
    "digest",
    "packet",
    "verdict",
    "send_back",
    "retryable",
    "jitter_sample",
    "attempts",
    "integrity",
    "head",
    "legacy_seal",
    "registry",
    "authority",
    "severity",
}


@pytest.mark.parametrize("kind", [Discover, *HANDLERS], ids=lambda k: k.__name__)
def test_every_field_of_a_command_is_checked_by_the_core_or_for_its_canonical_form(
    kind: type[Command],
) -> None:
    """A field added to a command later is refused its place until it is one or the other."""
    unlisted = {f.name for f in fields(kind)} - set(OUTSIDE_INPUT.get(kind, ()))
    assert unlisted <= CHECKED_BY_THE_CORE, unlisted - CHECKED_BY_THE_CORE
