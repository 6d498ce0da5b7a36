-- stopline schema, version 1 (SQLite). Times are RFC 3339 UTC text with microseconds,
-- which sort as they compare. JSON documents are text.

CREATE TABLE automations (
    name        TEXT PRIMARY KEY,
    policy      TEXT NOT NULL,
    version     TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE items (
    id                TEXT PRIMARY KEY,
    automation        TEXT NOT NULL,
    key               TEXT NOT NULL,
    state             TEXT NOT NULL,
    state_class       TEXT NOT NULL CHECK (state_class IN ('work', 'stop', 'terminal')),
    version           INTEGER NOT NULL,
    seq               INTEGER NOT NULL,
    head              TEXT NOT NULL,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    attempts          INTEGER NOT NULL,
    max_attempts      INTEGER NOT NULL,
    next_eligible_at  TEXT NOT NULL,
    lease_owner       TEXT,
    lease_token       INTEGER NOT NULL DEFAULT 0,
    lease_expires_at  TEXT,
    claimed_at        TEXT,
    attempt_log       TEXT NOT NULL DEFAULT '[]',
    data              TEXT NOT NULL,
    UNIQUE (automation, key)
);

-- Claims scan only due work: (state class, next eligible time).
CREATE INDEX items_due ON items (state_class, next_eligible_at);
CREATE INDEX items_state ON items (state, updated_at);

CREATE TABLE events (
    item_id     TEXT NOT NULL REFERENCES items (id),
    seq         INTEGER NOT NULL,
    at          TEXT NOT NULL,
    command     TEXT NOT NULL,
    actor       TEXT NOT NULL,
    from_state  TEXT,
    to_state    TEXT NOT NULL,
    reasons     TEXT NOT NULL,
    digests     TEXT NOT NULL,
    detail      TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL,
    PRIMARY KEY (item_id, seq)
);

-- The event log is append-only.
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

CREATE TABLE actors (
    name        TEXT PRIMARY KEY,
    roles       TEXT NOT NULL,
    active      INTEGER NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE actor_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TEXT NOT NULL,
    actor       TEXT NOT NULL,
    change      TEXT NOT NULL,
    detail      TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL
);

CREATE TABLE tokens (
    hash        TEXT PRIMARY KEY,
    actor       TEXT NOT NULL REFERENCES actors (name),
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);

CREATE TABLE idempotency (
    key             TEXT PRIMARY KEY,
    command_digest  TEXT NOT NULL,
    item_id         TEXT,
    decision        TEXT NOT NULL,
    at              TEXT NOT NULL
);

-- Refusals are audited apart from the item's history.
CREATE TABLE refusals (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        TEXT NOT NULL,
    item_id   TEXT,
    command   TEXT NOT NULL,
    actor     TEXT,
    reasons   TEXT NOT NULL
);

CREATE TABLE schedules (
    automation   TEXT PRIMARY KEY,
    last_run_at  TEXT NOT NULL
);
