"""An agent in signed mode: it acts only on an approval its approver signed.

Whoever can write the database can append an approval that hashes and seals consistently
(stopline's own code in unsigned mode does); only the approver's signature, checked against
the certificates of the host's trust root, tells it apart. ``begin_action`` checks it before
the agent acts, as a worker does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from stopline.agents.desk import AgentDesk
from stopline.controller import Controller, utcnow
from stopline.store import Store
from stopline.trust import admin
from stopline.trust.authority import Trust
from stopline.trust.keys import KeySigner

from .conftest import AGENT, AUTOMATION, AgentLab

CERTIFIED = {"root": (), "alice": ("approver", "operator"), AGENT: ("agent",)}


@pytest.fixture
def signed(lab: AgentLab, tmp_path: Path) -> Iterator[tuple[Store, Trust, dict[str, KeySigner]]]:
    keys = {name: KeySigner.generate() for name in CERTIFIED}
    for name, signer in keys.items():
        signer.save(tmp_path / f"key-{name}", f"test-{name}")
    trust = Trust((keys["root"].public_key,))
    store = lab.store()
    try:
        for name, roles in CERTIFIED.items():
            if name != "root":
                admin.certify(
                    store, keys["root"], name, keys[name].public_key, roles=roles, now=utcnow()
                )
        yield store, trust, keys
    finally:
        store.close()


def test_an_agent_acts_only_on_a_signed_approval(
    signed: tuple[Store, Trust, dict[str, KeySigner]],
) -> None:
    """An approval appended by stopline's own code in unsigned mode (a consistent chain, no
    signature): begin_action stops the item signature_invalid and the agent never acts. A
    second proposal approved with alice's signature is begun."""
    store, trust, keys = signed
    desk = AgentDesk(store, AGENT, trust=trust, host_trust=False)

    forged = desk.propose(AUTOMATION, "k-forged", "restart", "x", {"n": 1}, {"seen": True})
    assert forged.ok, forged
    attacker = Controller(store, trust=None)
    decision = attacker.approve(forged.data["ref"], proposal=forged.data["digest"], actor="alice")
    assert decision.applied and decision.state.value == "approved"
    begun = desk.begin(forged.data["ref"], forged.data["digest"])
    assert not begun.ok and "integrity_failed" in begun.reasons, begun
    stopped = store.find(AUTOMATION, "k-forged")
    assert stopped is not None and stopped.state.value == "exception"
    assert "signature_invalid" in store.history(stopped.id)[-1].reasons

    genuine = desk.propose(AUTOMATION, "k-signed", "restart", "x", {"n": 2}, {"seen": True})
    person = Controller(store, trust=trust, signer=keys["alice"])
    assert person.approve(
        genuine.data["ref"], proposal=genuine.data["digest"], actor="alice"
    ).applied
    assert desk.begin(genuine.data["ref"], genuine.data["digest"]).ok
