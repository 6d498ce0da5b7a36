-- What operators watch: notification endpoints a receiver retired (an answer of 410 Gone
-- disables the endpoint until an operator enables it again), and worker heartbeats (each
-- worker process writes its row as it loops, with its step count and step-duration histogram
-- as JSON in `stats`; `stopline workers` and /metrics read them).
-- Times are RFC 3339 UTC text, as in the outbox tables.

CREATE TABLE notify_endpoints (
    url          TEXT PRIMARY KEY,
    disabled_at  TEXT NOT NULL,
    reason       TEXT NOT NULL
);

CREATE TABLE worker_heartbeats (
    worker       TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    automations  TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    seen_at      TEXT NOT NULL,
    stats        TEXT NOT NULL
);
