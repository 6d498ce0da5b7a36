"""What a person's signature on a command binds, beside its item and actor: the command's own
fields and the head the item had when it was given. Whoever carries a signed command (a
server speaking for people, a proxy, a process that read it from a log) can neither change
what it says nor give it again later."""

from __future__ import annotations

from typing import Any

from stopline.controller import utcnow
from stopline.core.commands import Note
from stopline.core.decision import Decision, Outcome
from stopline.store import Store
from stopline.trust.checks import attest

from .signedlab import SignedLab


def signed_note(lab: SignedLab, store: Store, body: str) -> dict[str, Any]:
    """alice's note, signed with her key; the attestation her event records."""
    done = lab.controller(store, "alice").note("pay/k1", actor="alice", body=body)
    assert done.outcome is Outcome.APPLIED, done.reasons
    head = store.history(lab.item().id)[-1]
    return dict(head.detail["attestation"])


def refused_for(answer: Decision, why: str) -> None:
    assert answer.outcome is Outcome.REFUSED
    assert [str(r) for r in answer.reasons] == ["signature_invalid"]
    assert any(why in line for line in answer.explanation), answer.explanation


def test_a_signed_command_whose_fields_were_changed_is_refused(lab: SignedLab) -> None:
    """alice signs a note; on the way its body is changed and her attestation kept: refused,
    for the command alone (the head is the one she signed on), and nothing is written."""
    item = lab.item()
    signed = attest(item, Note(actor="alice", body="hold it"), lab.keys["alice"], utcnow())
    changed = Note(actor="alice", body="pay it twice", attestation=signed.to_plain())
    with lab.store() as store:
        answer = lab.controller(store).run("pay/k1", changed)
    refused_for(answer, "bound to another command")
    assert not any("another head" in line for line in answer.explanation)
    assert lab.item().head == item.head


def test_a_signed_command_given_again_after_the_item_moved_on_is_refused(
    lab: SignedLab,
) -> None:
    """alice's signed note, given again word for word after bob's note moved the item's head
    on, is refused: the attestation binds the head it was given on."""
    with lab.store() as store:
        attestation = signed_note(lab, store, "hold it")
        bob = lab.controller(store, "bob").note("pay/k1", actor="bob", body="seen")
        assert bob.outcome is Outcome.APPLIED
        again = Note(actor="alice", body="hold it", attestation=attestation)
        refused_for(lab.controller(store).run("pay/k1", again), "bound to another head")
