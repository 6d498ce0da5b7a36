-- Sessions of the web inbox that were signed out. A session is a signed cookie (web/session.py)
-- that holds a random session id; signing out records the session here, keyed by the SHA-256
-- of its id (never the id), so that every server process, before and after a restart, reads a
-- copy of that cookie as a new, signed-out session. `valid_until` is the latest time the
-- cookie could still be valid (its age, with a margin for clocks that differ): a row past it
-- holds nothing a cookie could use, and a later sign-out drops it.
-- Times are RFC 3339 UTC text, as in the heartbeats and the outbox tables.

CREATE TABLE ended_sessions (
    session_hash  TEXT PRIMARY KEY,
    valid_until   TEXT NOT NULL
);

CREATE INDEX ended_sessions_until ON ended_sessions (valid_until);
