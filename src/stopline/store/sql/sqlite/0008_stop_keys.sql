-- The inbox in time independent of the backlog. Each item row keeps two keys the inbox sorts
-- and pages on: `state_since`, when the item entered its current state (the time of the last
-- event, in the history's order, that changed the state: an approval short of the count, an
-- edit or a refusal does not),
-- and `severity_rank`, the rank of data.severity (core/severity.py; absent: normal, 2). Both
-- are written with the row by every decision and derived from what the row and its events
-- already say, so `stopline verify` recomputes them (`item/stop_key_mismatch`). The indexes
-- hold stopped items only: a step of work pays nothing for them.
ALTER TABLE items ADD COLUMN state_since TEXT;
ALTER TABLE items ADD COLUMN severity_rank INTEGER NOT NULL DEFAULT 2;

UPDATE items SET
    state_since = COALESCE(
        (SELECT e.at FROM events e
         WHERE e.item_id = items.id AND (e.from_state IS NULL OR e.from_state <> e.to_state)
         ORDER BY e.seq DESC LIMIT 1),
        created_at),
    severity_rank = CASE json_extract(data, '$.severity') WHEN 'info' THEN 0 WHEN 'low' THEN 1
        WHEN 'high' THEN 3 WHEN 'critical' THEN 4 ELSE 2 END;

CREATE INDEX items_stop_since ON items (state_since, id) WHERE state_class = 'stop';
CREATE INDEX items_stop_severity ON items (severity_rank DESC, state_since, id)
    WHERE state_class = 'stop';
CREATE INDEX items_stop_state ON items (state, state_since) WHERE state_class = 'stop';
