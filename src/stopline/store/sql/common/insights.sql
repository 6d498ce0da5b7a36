-- Named queries of the insights port (stopline.store.insights): aggregates and listings for
-- metrics, the inbox and the API. Read-only, and the same in both dialects; the statements
-- that differ are in sql/<dialect>/insights.sql. Parameters are :name.

-- name: transition_counts
-- Applied decisions grouped by what they did. The reasons are a JSON array, compared as text.
SELECT command, from_state, to_state, CAST(reasons AS TEXT) AS reasons, COUNT(*) AS n
FROM events
GROUP BY command, from_state, to_state, CAST(reasons AS TEXT)
ORDER BY command, from_state, to_state, CAST(reasons AS TEXT);

-- name: refusal_counts
-- Audited refusals by command and reason codes (the refusals table counts repeats in `count`).
SELECT command, CAST(reasons AS TEXT) AS reasons, SUM(count) AS n
FROM refusals
GROUP BY command, CAST(reasons AS TEXT)
ORDER BY command, CAST(reasons AS TEXT);

-- name: notification_counts
SELECT status, COUNT(*) AS n FROM notifications GROUP BY status ORDER BY status;

-- name: automation_names
SELECT name FROM automations ORDER BY name;

-- name: stopped_since
-- When the item entered its current state: the time of its last event that changed the state
-- (an approval short of the count, an edit or a refusal changes nothing here), kept in the row
-- (migration 0008; `verify` recomputes it from the events).
SELECT COALESCE(state_since, created_at) AS since FROM items WHERE id = :id;

-- name: automation_states
-- Items by automation and state, with the earliest last change among them.
SELECT automation, state, COUNT(*) AS n, MIN(updated_at) AS oldest
FROM items GROUP BY automation, state ORDER BY automation, state;

-- name: stop_spans
-- Each time an item entered a stop state and later left it: when it stopped and when the
-- event that moved it on was written (the time a person took to decide).
SELECT i.automation, s.at AS stopped_at, n.at AS decided_at
FROM events s
JOIN items i ON i.id = s.item_id
JOIN events n ON n.item_id = s.item_id AND n.seq = (
    SELECT MIN(x.seq) FROM events x
    WHERE x.item_id = s.item_id AND x.seq > s.seq AND x.to_state <> s.to_state
)
WHERE s.to_state IN ('awaiting_approval', 'ready_for_review', 'exception', 'exhausted',
    'revision_failed')
  AND (s.from_state IS NULL OR s.from_state <> s.to_state);

