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
