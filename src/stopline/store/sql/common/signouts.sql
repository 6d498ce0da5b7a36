-- Named queries of signed-out web sessions (stopline.store.signouts), the same in both
-- dialects. `session_hash` is the SHA-256 of a session id, never the id; times are RFC 3339
-- UTC text.

-- name: end_session
-- A session signed out until :valid_until (signed out again: the later of the two times).
INSERT INTO ended_sessions (session_hash, valid_until) VALUES (:session_hash, :valid_until)
ON CONFLICT (session_hash) DO UPDATE SET valid_until = excluded.valid_until
WHERE ended_sessions.valid_until < excluded.valid_until;

-- name: session_ended
-- One read by the primary key, on every request of a signed-in session.
SELECT 1 AS ended FROM ended_sessions WHERE session_hash = :session_hash;

-- name: forget_ended_sessions
-- Rows past :before, whose cookies have expired whatever the row says, are dropped.
DELETE FROM ended_sessions WHERE valid_until < :before;
