-- Integrity (stopline.core.integrity, .ledger, .registry).
-- The ledger: one hash chain across the store, of every item's creation and every event of a
-- person's command, so a deleted item or a rewritten history is found by `stopline verify`.
CREATE TABLE ledger (
    n           INTEGER PRIMARY KEY,
    at          TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('create', 'authority')),
    item_id     TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    event_hash  TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL,
    UNIQUE (item_id, seq)
);

CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;

-- Seals recorded when a database from before seals was upgraded: the seal of each item as it
-- was found, bound to the head event it had then (a later event carries its own seal).
CREATE TABLE legacy_seals (
    item_id  TEXT PRIMARY KEY,
    head     TEXT NOT NULL,
    seal     TEXT NOT NULL,
    at       TEXT NOT NULL
);
