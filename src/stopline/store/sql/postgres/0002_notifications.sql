-- The notification outbox: signed webhooks sent when an item enters a stop state or a
-- revision fails (stopline.runtime.notifier). Times are RFC 3339 UTC text. A notification never
-- touches an item: these tables are apart from the item's history.

CREATE TABLE notify_cursor (
    name  TEXT PRIMARY KEY,
    at    TEXT NOT NULL
);

CREATE TABLE notifications (
    id               TEXT PRIMARY KEY,
    item_id          TEXT NOT NULL,
    seq              INTEGER NOT NULL,
    url              TEXT NOT NULL,
    type             TEXT NOT NULL,
    payload          TEXT NOT NULL,
    status           TEXT NOT NULL,
    attempts         INTEGER NOT NULL,
    next_attempt_at  TEXT NOT NULL,
    last_error       TEXT,
    created_at       TEXT NOT NULL,
    delivered_at     TEXT,
    UNIQUE (item_id, seq, url)
);

CREATE TABLE notification_attempts (
    notification_id  TEXT NOT NULL,
    attempt          INTEGER NOT NULL,
    at               TEXT NOT NULL,
    status_code      INTEGER,
    error            TEXT,
    PRIMARY KEY (notification_id, attempt)
);
