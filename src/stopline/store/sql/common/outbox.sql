-- Named queries of the notification outbox (stopline.store.outbox), the same in both
-- dialects; sql/<dialect>/outbox.sql has the two that differ (reading the new stop events,
-- claiming). Times in the outbox tables are RFC 3339 UTC text on both databases, of one fixed
-- width, so they compare as text. Parameters are :name.

-- name: cursor_marks
-- "start": when notifications were first switched on; "events": the newest event time seen.
SELECT name, at FROM notify_cursor;

-- name: set_cursor_start
-- The first start mark stays: hosts that start later do not move it.
INSERT INTO notify_cursor (name, at) VALUES ('start', :at)
ON CONFLICT (name) DO NOTHING;

-- name: set_cursor_events
INSERT INTO notify_cursor (name, at) VALUES ('events', :at)
ON CONFLICT (name) DO UPDATE SET at = excluded.at;

-- name: enqueue
-- One message per (event, URL): a message seen again (two hosts, an overlapping read) is
-- not added twice.
INSERT INTO notifications (id, item_id, seq, url, type, payload, status, attempts,
    next_attempt_at, created_at)
VALUES (:id, :item_id, :seq, :url, :type, :payload, 'pending', 0, :now, :now)
ON CONFLICT DO NOTHING;

-- name: record_result
-- Fenced by the claim: only the holder of the lease it set (the same attempts count and
-- lease time) records the outcome of its attempt.
UPDATE notifications SET status = :status, attempts = :attempts, next_attempt_at = :next,
    last_error = :error, delivered_at = :delivered
WHERE id = :id AND status = 'pending' AND attempts = :seen_attempts
  AND next_attempt_at = :lease;

-- name: insert_attempt
INSERT INTO notification_attempts (notification_id, attempt, at, status_code, error)
VALUES (:id, :attempt, :at, :status_code, :error);

-- name: list_notifications
SELECT * FROM notifications
WHERE CAST(:status AS TEXT) IS NULL OR status = :status
ORDER BY created_at, id
LIMIT :limit;

-- name: list_attempts
SELECT * FROM notification_attempts WHERE notification_id = :id ORDER BY attempt;

-- name: count_by_status
SELECT status, COUNT(*) AS n FROM notifications GROUP BY status ORDER BY status;

-- name: disable_endpoint
-- A receiver answered 410 Gone: nothing more is sent to this URL until it is enabled again.
INSERT INTO notify_endpoints (url, disabled_at, reason) VALUES (:url, :at, :reason)
ON CONFLICT (url) DO NOTHING;

-- name: fail_pending_for
-- The messages still waiting for a disabled endpoint fail with it.
UPDATE notifications SET status = 'failed', last_error = :reason
WHERE url = :url AND status = 'pending';

-- name: enable_endpoint
DELETE FROM notify_endpoints WHERE url = :url;

-- name: disabled_endpoints
SELECT url, disabled_at, reason FROM notify_endpoints ORDER BY url;
