-- Refusals are aggregated: one row per (item, command, actor, reason codes), counting how many
-- times that refusal happened and when first and last. The store upserts on `group_key`, a
-- digest of those four fields (see SQLStore.record_refusal), so a client repeating a refused
-- command adds to a count instead of adding rows.
--
-- Rows written before this version are merged the same way here; their key cannot be
-- recomputed in SQL, so each merged row is keyed by its first id ('legacy:<id>'), and a later
-- refusal of the same kind starts one new row next to it.
CREATE TABLE refusals_v5 (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    group_key  TEXT NOT NULL UNIQUE,
    item_id    TEXT,
    command    TEXT NOT NULL,
    actor      TEXT,
    reasons    TEXT NOT NULL,
    count      INTEGER NOT NULL,
    first_at   TEXT NOT NULL,
    last_at    TEXT NOT NULL
);

INSERT INTO refusals_v5 (id, group_key, item_id, command, actor, reasons, count, first_at,
    last_at)
SELECT MIN(id), 'legacy:' || MIN(id), item_id, command, actor, reasons, COUNT(*), MIN(at),
    MAX(at)
FROM refusals
GROUP BY item_id, command, actor, reasons;

DROP TABLE refusals;

ALTER TABLE refusals_v5 RENAME TO refusals;
