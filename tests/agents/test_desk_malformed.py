"""An agent's listing (``list_items``) shows its items as stored, not checked item by item: one
of them edited by SQL into a shape no write makes is listed as malformed, and the others as
ever (the listing used to fail with it). Reading that item alone is refused
``integrity_failed``, as for any record its history did not seal."""

from __future__ import annotations

from stopline.agents.desk import AgentDesk

from .conftest import AGENT, AUTOMATION, AgentLab


def test_a_record_edited_into_another_shape_leaves_the_agents_listing_whole(
    lab: AgentLab,
) -> None:
    from integrity.attacker import Attacker

    store = lab.store()
    try:
        desk = AgentDesk(store, AGENT)
        refs = {}
        for key in ("k-edited", "k-sound"):
            made = desk.propose(AUTOMATION, key, "restart", "x", {"n": 1}, {"seen": True})
            assert made.ok, made
            refs[key] = made.data["ref"]
        attacker = Attacker(lab.url)
        try:
            data = attacker.data(refs["k-edited"])
            attacker.put_data(refs["k-edited"], {**data, "proposal": [data["proposal"]]})
        finally:
            attacker.close()
        listed = desk.list()
        assert listed.ok, listed
        views = {view["key"]: view for view in listed.data["items"]}
        assert views["k-edited"]["malformed"] is True
        assert views["k-edited"]["proposal"] is None and views["k-edited"]["digest"] is None
        assert views["k-sound"]["proposal"]["params"] == {"n": 1}
        assert "malformed" not in views["k-sound"]
        alone = desk.get(refs["k-edited"])
        assert not alone.ok and alone.reasons == ("integrity_failed",), alone
    finally:
        store.close()
