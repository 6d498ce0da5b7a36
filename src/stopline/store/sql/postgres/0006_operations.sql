-- What operators watch: notification endpoints a receiver retired (an answer of 410 Gone
-- disables the endpoint until an operator enables it again), and worker heartbeats (each
-- worker process writes its row as it loops; `stopline workers` and /metrics read them).
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
    steps        INTEGER NOT NULL
);
