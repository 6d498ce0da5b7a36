-- Named queries of the store that read the same in both dialects (the rest are in
-- sql/<dialect>/queries.sql).

-- name: items_with_heads
-- A fragment: item rows, each with its last event by sequence (the e_ columns) and the seal
-- an upgrade recorded for that event; current_item and current_items say which rows.
SELECT i.*,
    e.item_id AS e_item_id, e.seq AS e_seq, e.at AS e_at, e.command AS e_command,
    e.actor AS e_actor, e.from_state AS e_from_state, e.to_state AS e_to_state, e.reasons AS e_reasons,
    e.digests AS e_digests, e.detail AS e_detail, e.prev_hash AS e_prev_hash, e.hash AS e_hash,
    l.seal AS legacy_seal
FROM items i
LEFT JOIN events e ON e.item_id = i.id
    AND e.seq = (SELECT MAX(m.seq) FROM events m WHERE m.item_id = i.id)
LEFT JOIN legacy_seals l ON l.item_id = e.item_id AND l.head = e.hash;

-- name: current_item
-- The item row, its last event by sequence and the seal an upgrade recorded for that event,
-- in one statement (one snapshot, one round trip): what a worker checks before it acts.
{{items_with_heads}}
WHERE i.id = :id;

-- name: stop_keys
SELECT id, state_since, severity_rank, search_text FROM items ORDER BY id;

-- name: stopped_after
-- One page of the rows of stopped items after :after (by id), for migration 9's data step.
SELECT * FROM items WHERE state_class = 'stop' AND id > :after ORDER BY id LIMIT :limit;

-- name: set_search_text
UPDATE items SET search_text = :search_text WHERE id = :id;
