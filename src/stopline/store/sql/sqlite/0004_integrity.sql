-- Integrity (stopline.core.integrity, .ledger, .registry).
-- The ledger (stopline.core.ledger): SHARDS independent hash chains, of every item's creation,
-- every event of a person's command, every milestone of acting and every registry event, so a
-- deleted item, a history cut back or rewritten, or a registry cut back is found.
CREATE TABLE ledger (
    shard       INTEGER NOT NULL,
    n           INTEGER NOT NULL,
    at          TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('create', 'authority', 'milestone', 'registry')),
    item_id     TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    event_hash  TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL,
    PRIMARY KEY (shard, n),
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
