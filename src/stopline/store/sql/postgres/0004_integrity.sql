-- Integrity (stopline.core.integrity, .ledger, .registry). The same tables as on SQLite.
-- The ledger (stopline.core.ledger): SHARDS independent hash chains, of every item's creation,
-- every event of a person's command, every milestone of acting and every registry event, so a
-- deleted item, a history cut back or rewritten, or a registry cut back is found. Appends to a
-- shard take the advisory lock ('stopline.ledger', shard): see lock_ledger in queries.sql.
CREATE TABLE ledger (
    shard       integer NOT NULL,
    n           bigint NOT NULL,
    at          timestamptz NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('create', 'authority', 'milestone', 'registry')),
    item_id     text COLLATE "C" NOT NULL,
    seq         bigint NOT NULL,
    event_hash  text NOT NULL,
    prev_hash   text NOT NULL,
    hash        text NOT NULL,
    PRIMARY KEY (shard, n),
    UNIQUE (item_id, seq)
);

CREATE TRIGGER ledger_append_only
BEFORE UPDATE OR DELETE ON ledger
FOR EACH ROW EXECUTE FUNCTION stopline_append_only();

-- Seals recorded when a database from before seals was upgraded: the seal of each item as it
-- was found, bound to the head event it had then (a later event carries its own seal).
CREATE TABLE legacy_seals (
    item_id  text COLLATE "C" PRIMARY KEY,
    head     text NOT NULL,
    seal     text NOT NULL,
    at       timestamptz NOT NULL
);

CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON ledger
FOR EACH STATEMENT EXECUTE FUNCTION stopline_append_only();
