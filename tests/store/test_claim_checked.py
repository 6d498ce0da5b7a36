"""``Store.claim_checked``: a claim that reads, in its own transaction, what the check of a fresh
claim holds the row to (its last event and that event's upgrade seal), on SQLite and
PostgreSQL. What it hands the worker must be what a read of its own would have found: the
head the row names, never an older one from before a write the claim's row lock waited out."""

from __future__ import annotations

from helpers import T0, decide_at, discover
from integrity.attacker import Attacker
from stopline.core.commands import Observe
from stopline.core.integrity import head_findings
from stopline.store import open_store

COLUMNS = "item_id, seq, at, command, actor, from_state, to_state, reasons, digests, detail"

# A write that lands while the claim takes the row: in the claim's own statement, a new last
# event and the row's head moved to it. On PostgreSQL the claim's join of the events reads the
# statement's snapshot, from before that event (as with a write committed between the snapshot
# and the row lock); on SQLite the claim reads the heads in a statement of its own.
BUMP = {
    "postgres": [
        f"""CREATE FUNCTION bump_head() RETURNS trigger AS $$ BEGIN
            IF NEW.lease_owner = 'w1' AND OLD.lease_owner IS DISTINCT FROM 'w1' THEN
                INSERT INTO events ({COLUMNS}, prev_hash, hash)
                SELECT {COLUMNS.replace("seq", "seq + 1")}, hash, 'bumped-' || item_id
                FROM events WHERE item_id = NEW.id ORDER BY seq DESC LIMIT 1;
                NEW.head := 'bumped-' || NEW.id;
            END IF;
            RETURN NEW;
        END $$ LANGUAGE plpgsql""",
        "CREATE TRIGGER bump_head BEFORE UPDATE ON items FOR EACH ROW EXECUTE FUNCTION bump_head()",
    ],
    "sqlite": [
        f"""CREATE TRIGGER bump_head AFTER UPDATE OF lease_owner ON items
        WHEN NEW.lease_owner = 'w1' AND OLD.lease_owner IS NOT 'w1' BEGIN
            INSERT INTO events ({COLUMNS}, prev_hash, hash)
            SELECT {COLUMNS.replace("seq", "seq + 1")}, hash, 'bumped-' || item_id
            FROM events WHERE item_id = NEW.id ORDER BY seq DESC LIMIT 1;
            UPDATE items SET head = 'bumped-' || NEW.id WHERE id = NEW.id;
        END""",
    ],
}


def test_a_claim_reads_the_head_a_read_of_its_own_would(store_url: str) -> None:
    """Each claimed item comes with its row as claimed and the head event and upgrade seal
    that ``guard_reads`` reads for it just after: items with one event and with several."""
    store = open_store(store_url)
    try:
        first = discover(store, "a")
        discover(store, "b")
        claimed = store.claim("w0", T0, 30)
        assert claimed is not None and claimed.id == first.id
        moved = decide_at(claimed, Observe("w0", claimed.lease_token, {"n": 1}, T0), T0)
        assert moved.after is not None and store.apply(moved)
        later = T0.replace(hour=13)
        found = store.claim_checked("w1", later, 30, limit=5)
        assert sorted(item.id for item, _ in found) == ["auto-a", "auto-b"]
        for item, reads in found:
            assert reads.item == item and item.lease_owner == "w1"
            again = store.guard_reads(item.id, history=False, registry=False)
            assert (reads.head, reads.legacy_seal) == (again.head, again.legacy_seal)
            assert reads.head is not None and reads.head.hash == item.head
            assert head_findings(item, reads.head, reads.legacy_seal) == []
        assert store.claim_checked("w1", later, 30, limit=5) == []
    finally:
        store.close()


def test_a_write_the_claim_waited_out_is_read_again(store_url: str) -> None:
    """A new last event written while the claim takes the row: the claim hands over that
    event, the one the row names (an older head would make the check stop a sound item)."""
    store = open_store(store_url)
    attacker = Attacker(store_url)
    try:
        discover(store, "a")
        for statement in BUMP[attacker.dialect]:
            attacker.sql(statement)
        [(item, reads)] = store.claim_checked("w1", T0, 30, limit=3)
        assert item.head == f"bumped-{item.id}"
        assert reads.head is not None and reads.head.hash == item.head
        assert reads.head.seq == 2
    finally:
        attacker.close()
        store.close()
