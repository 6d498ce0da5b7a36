-- Refusals are aggregated: one row per (item, command, actor, reason codes), counting how many
-- times that refusal happened and when first and last. The store upserts on `group_key`, a
-- digest of those four fields (see SQLStore.record_refusal), so a client repeating a refused
-- command adds to a count instead of adding rows. The same columns as the SQLite table.
--
-- Rows written before this version are merged the same way here (into the row with the
-- smallest id); their key cannot be recomputed in SQL, so each merged row is keyed by that id
-- ('legacy:<id>'), and a later refusal of the same kind starts one new row next to it.
ALTER TABLE refusals RENAME COLUMN at TO first_at;
ALTER TABLE refusals ADD COLUMN last_at timestamptz;
ALTER TABLE refusals ADD COLUMN count bigint;
ALTER TABLE refusals ADD COLUMN group_key text;

UPDATE refusals AS r
SET group_key = 'legacy:' || r.id, count = g.n, first_at = g.first_at, last_at = g.last_at
FROM (
    SELECT MIN(id) AS id, COUNT(*) AS n, MIN(first_at) AS first_at, MAX(first_at) AS last_at
    FROM refusals
    GROUP BY item_id, command, actor, reasons::text
) AS g
WHERE r.id = g.id;

DELETE FROM refusals WHERE group_key IS NULL;

ALTER TABLE refusals
    ALTER COLUMN last_at SET NOT NULL,
    ALTER COLUMN count SET NOT NULL,
    ALTER COLUMN group_key SET NOT NULL,
    ADD CONSTRAINT refusals_group_key UNIQUE (group_key);
