-- Outbox queries that PostgreSQL writes its own way. :stops is a JSON array of state names.

-- name: stop_events_since
-- Events after :since that put an item into one of :stops (a stop state it was not in).
SELECT e.item_id, e.seq, e.at, e.command, e.from_state, e.to_state, e.reasons,
    i.automation, i.key
FROM events e JOIN items i ON i.id = e.item_id
WHERE e.at > :since
  AND e.to_state IN (SELECT json_array_elements_text(CAST(:stops AS json)))
  AND (e.from_state IS NULL OR e.from_state <> e.to_state)
ORDER BY e.at, e.item_id, e.seq;

-- name: claim_next
-- Lease the most overdue pending message for one of :urls (a JSON array: the endpoints this
-- sender has configured; a row naming any other URL is never sent): its next attempt time becomes the end of the lease,
-- so no other claim takes it until then. SKIP LOCKED passes over a row another claim is
-- taking; the outer condition is checked again on the locked row, so a row that claim
-- already leased is never taken twice.
UPDATE notifications SET next_attempt_at = :lease
WHERE id = (
    SELECT id FROM notifications
    WHERE status = 'pending' AND next_attempt_at <= :now
      AND url IN (SELECT json_array_elements_text(CAST(:urls AS json)))
    ORDER BY next_attempt_at, id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
  AND status = 'pending' AND next_attempt_at <= :now
RETURNING *;
