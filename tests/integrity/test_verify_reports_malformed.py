"""``verify`` reports what it finds and never stops short on it, and a record nobody can trust
can still be closed: three faults a mutation pass over ``core/verify.py`` found.

- A writer's clock that steps back: the inbox key ``state_since`` is the time of the last
  move in the history's order (what every write sets), not the latest time among the moves.
- A proposal whose ``approvals`` (or the proposal itself) was edited into another shape:
  reported ``record_malformed``; ``verify`` and ``close`` used to raise on it.
(The third, an incident whose recorded findings were edited into something other than
objects, is in ``tests/core/test_verify_incidents.py``.)"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from helpers import T0, decide_at, discover
from stopline.core.commands import NeedsEyes, Observe
from stopline.core.integrity import RECORD_MALFORMED
from stopline.core.verify import INCIDENT, entered_at
from stopline.store import Store
from stopline.verification import verify_store

from .attacker import Attacker
from .lab import Vault

S = timedelta(seconds=1)


def test_a_clock_that_stepped_back_is_not_an_edited_inbox_key(store: Store) -> None:
    """Discovered at +100 s by one host, observed at +50 s and stopped at +60 s by a worker
    whose clock is behind: the item entered its stop state at +60 s, the last move, though
    its discovery carries a later time. Nothing was edited, so verify finds nothing."""
    discover(store, "k", at=T0 + 100 * S)
    item = store.claim("w1", T0 + 100 * S, 30.0)
    assert item is not None
    observed = decide_at(
        item, Observe("w1", item.lease_token, {"cpu": 1}, T0 + 50 * S), T0 + 50 * S
    )
    assert observed.applied and store.apply(observed)
    item = store.claim("w1", T0 + 60 * S, 30.0)
    assert item is not None
    stopped = decide_at(item, NeedsEyes("w1", item.lease_token, "ops", "look"), T0 + 60 * S)
    assert stopped.applied and store.apply(stopped)
    row = store.get(item.id)
    assert row is not None
    assert store.stop_keys()[row.id][0] == T0 + 60 * S
    assert entered_at(row, store.history(row.id)) == T0 + 60 * S
    assert verify_store(store).findings == []


def malformed(vault: Vault, change: Callable[[dict[str, Any]], None]) -> None:
    attacker = Attacker(vault.url)
    try:
        data = attacker.data("vault/pay-waiting")
        change(data)
        attacker.put_data("vault/pay-waiting", data)
    finally:
        attacker.close()


def set_approvals(value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["proposal"]["approvals"] = value

    return change


def proposal_as_list(data: dict[str, Any]) -> None:
    data["proposal"] = [data["proposal"]]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (set_approvals(5), "proposal.approvals"),
        (set_approvals(None), "proposal.approvals"),
        (set_approvals({"actor": "bob"}), "proposal.approvals"),
        (proposal_as_list, "proposal"),
    ],
    ids=["a-number", "null", "an-object", "proposal-a-list"],
)
def test_a_proposal_edited_into_another_shape_is_reported_and_can_be_closed(
    vault_copy: Callable[[str], Vault], edit: Callable[[dict[str, Any]], None], field: str
) -> None:
    vault = vault_copy("malformed")
    malformed(vault, edit)
    report = vault.verify()
    found = {(f["ref"], f["field"], f["reason"]) for f in report["findings"]}
    item_id = vault.item("pay-waiting").id
    assert (item_id, field, RECORD_MALFORMED) in found, report["findings"]
    # the record is shown as stored, and the listing of every other item still works
    shown = vault.cli_json("show", "vault/pay-waiting")
    assert shown["integrity"]["ok"] is False
    assert "proposal" in shown["data"]
    assert "data, as stored:" in vault.cli("show", "vault/pay-waiting", ok=(0,)).stdout
    listed = {row["key"]: row for row in vault.cli_json("items")["items"]}
    why = listed["pay-waiting"]["why"]
    # the listing checks each row against its last event (listing.py): an edited row says so
    assert why.startswith("integrity_failed: "), why
    assert len(listed) > 1
    close = ("close", "vault/pay-waiting", "--actor", "alice", "--reason", "cannot trust it")
    answer = vault.cli_json(*close, ok=(0,))
    assert (answer["decision"], answer["state"]) == ("applied", "closed")
    assert answer["reasons"] == [INCIDENT]
    assert vault.states()["pay-waiting"] == "closed"


def test_a_record_not_as_sealed_is_offered_close_alone(
    vault_copy: Callable[[str], Vault],
) -> None:
    """A proposal edited by SQL (no approval needed any more): ``show`` and a refused command
    suggest ``close`` alone, the one command such a record takes; before, they went on
    suggesting ``approve``, which is refused ``integrity_failed``."""
    vault = vault_copy("unsealed")
    before = vault.cli("show", "vault/pay-waiting", ok=(0,)).stdout
    assert "stopline approve " in before and "stopline close " not in before
    malformed(vault, lambda data: data["proposal"].update(required_approvals=0))
    shown = vault.cli("show", "vault/pay-waiting", ok=(0,)).stdout
    hints = shown.split("\nnext:\n", 1)[1].splitlines()
    offered = [line.split()[1] for line in hints if line.startswith("  stopline ")]
    assert offered == ["close"], shown
    digest = vault.cli_json("show", "vault/pay-waiting")["proposal"]["digest"]
    approve = ("approve", "vault/pay-waiting", "--actor", "bob", "--proposal", digest)
    refused = vault.cli(*approve, ok=(3,)).stdout
    assert "integrity_failed" in refused
    hints = refused.split("\nnext:\n", 1)[1].splitlines()
    assert [line.split()[1] for line in hints if line.startswith("  stopline ")] == ["close"]
    assert vault.states()["pay-waiting"] == "awaiting_approval"
