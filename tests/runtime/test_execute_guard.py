"""The step that takes an approved item into ``delivering`` checks the whole record first:
an approved item whose history was rewritten by SQL after the approval (one event's detail
changed, nothing re-hashed) is stopped where it is, with no ``execute`` decision recorded and
the execute hook never run. (The delivery step checks again before any remote call; this
holds the check of the step before it on its own.) On both stores, a real worker in process."""

from __future__ import annotations

from typing import Any

from integrity.attacker import Attacker
from stopline import Deliver
from stopline.core.records import Item
from stopline.store import Store

from .test_execute_recheck import Run, restart_automation


def test_an_approved_item_with_a_rewritten_history_is_not_executed(
    store: Store, store_url: str
) -> None:
    runs: list[str] = []

    def execute(ctx: Any) -> Deliver:
        runs.append(ctx.item.id)
        return Deliver(result={"restarted": True})

    def rewrite(item: Item) -> None:
        attacker = Attacker(store_url)
        try:
            changed = attacker.sql(
                "UPDATE events SET detail = :detail WHERE item_id = :id AND seq = 1",
                {"id": item.id, "detail": attacker.json({"rewritten": True})},
            )
        finally:
            attacker.close()
        assert changed == 1

    item = Run(store, restart_automation(execute), after_approval=rewrite).item
    after = store.get(item.id)
    assert after is not None and after.state.value == "exception", after.state
    last = store.history(item.id)[-1]
    assert (last.command, last.from_state.value if last.from_state else None) == (
        "integrity_failed",
        "approved",
    )
    assert [f["reason"] for f in last.detail["findings"]] == ["event_altered"]
    assert not [e for e in store.history(item.id) if e.command == "execute"]
    assert runs == []
