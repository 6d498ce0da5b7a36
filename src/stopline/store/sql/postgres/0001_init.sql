-- stopline schema, version 1 (PostgreSQL). The same tables, columns and names as the SQLite
-- schema. Times are timestamptz; JSON documents are json (not jsonb: the
-- text is kept exactly, so digests recompute from it); the stored decision of an
-- idempotency key is returned verbatim and so kept as text. Columns that queries sort
-- by use the "C" collation, so the order is the bytewise one SQLite uses, whatever the
-- database's default collation.

-- The one time format of stopline (RFC 3339 UTC with microseconds), for JSON built in SQL.
CREATE FUNCTION stopline_rfc3339(t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;

CREATE TABLE automations (
    name        text PRIMARY KEY,
    policy      json NOT NULL,
    version     text NOT NULL,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE items (
    id                text COLLATE "C" PRIMARY KEY,
    automation        text NOT NULL,
    key               text NOT NULL,
    state             text COLLATE "C" NOT NULL,
    state_class       text NOT NULL CHECK (state_class IN ('work', 'stop', 'terminal')),
    version           bigint NOT NULL,
    seq               bigint NOT NULL,
    head              text NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    attempts          integer NOT NULL,
    max_attempts      integer NOT NULL,
    next_eligible_at  timestamptz NOT NULL,
    lease_owner       text,
    lease_token       bigint NOT NULL DEFAULT 0,
    lease_expires_at  timestamptz,
    claimed_at        timestamptz,
    attempt_log       json NOT NULL DEFAULT '[]',
    data              json NOT NULL,
    UNIQUE (automation, key)
);

-- Claims scan only due work: a partial index over the work class, in due order.
CREATE INDEX items_due ON items (next_eligible_at) WHERE state_class = 'work';
CREATE INDEX items_state ON items (state, updated_at);

-- Wake listeners (PostgresStore.wait_for_work) when an item enters or stays in a work state
-- with a new due time. Delivered at commit, so never for a write that rolls back. A claim
-- sets neither column and so wakes nobody.
CREATE FUNCTION stopline_notify_work() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('stopline_work', NEW.automation);
    RETURN NULL;
END
$$;

CREATE TRIGGER items_notify_work
AFTER INSERT OR UPDATE OF state, next_eligible_at ON items
FOR EACH ROW WHEN (NEW.state_class = 'work')
EXECUTE FUNCTION stopline_notify_work();

CREATE TABLE events (
    item_id     text COLLATE "C" NOT NULL REFERENCES items (id),
    seq         bigint NOT NULL,
    at          timestamptz NOT NULL,
    command     text NOT NULL,
    actor       text NOT NULL,
    from_state  text,
    to_state    text NOT NULL,
    reasons     json NOT NULL,
    digests     json NOT NULL,
    detail      json NOT NULL,
    prev_hash   text NOT NULL,
    hash        text NOT NULL,
    PRIMARY KEY (item_id, seq)
);

-- The event log is append-only.
CREATE FUNCTION stopline_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% are append-only', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END
$$;

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
FOR EACH ROW EXECUTE FUNCTION stopline_append_only();
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
FOR EACH ROW EXECUTE FUNCTION stopline_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
FOR EACH STATEMENT EXECUTE FUNCTION stopline_append_only();

CREATE TABLE actors (
    name        text COLLATE "C" PRIMARY KEY,
    roles       json NOT NULL,
    active      boolean NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE actor_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    actor       text NOT NULL,
    change      text NOT NULL,
    detail      json NOT NULL,
    prev_hash   text NOT NULL,
    hash        text NOT NULL
);

CREATE TABLE tokens (
    hash        text PRIMARY KEY,
    actor       text COLLATE "C" NOT NULL REFERENCES actors (name),
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);

CREATE TABLE idempotency (
    key             text PRIMARY KEY,
    command_digest  text NOT NULL,
    item_id         text,
    decision        text NOT NULL,
    at              timestamptz NOT NULL
);

-- Refusals are audited apart from the item's history.
CREATE TABLE refusals (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL,
    item_id   text,
    command   text NOT NULL,
    actor     text,
    reasons   json NOT NULL
);

CREATE TABLE schedules (
    automation   text PRIMARY KEY,
    last_run_at  timestamptz NOT NULL
);
