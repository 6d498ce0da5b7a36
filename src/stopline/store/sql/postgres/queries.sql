-- Named queries of the PostgreSQL store: the names and meaning of the SQLite ones, but for
-- update_item: this store writes a decision as one statement (apply_decision).
-- Parameters are :name (turned into %(name)s on load). Times are timestamptz parameters,
-- JSON documents jsonb ones; :automations is a text[] or NULL.

-- name: claim
-- Take the most overdue claimable item: a due work step, not leased (or its lease expired),
-- with budget left. Counting the attempt and fencing the lease happen in this one statement;
-- SKIP LOCKED lets concurrent claimers pass over a row another claim is taking.
-- A lease that expired without an outcome is logged as an abandoned attempt. The lease ends
-- at :leases[automation] (each automation's own lease, a JSON object of end times) or, for an
-- automation the object does not name, at :expires_at.
UPDATE items SET
    attempts = attempts + 1,
    lease_token = lease_token + 1,
    version = version + 1,
    attempt_log = CASE WHEN lease_owner IS NULL THEN attempt_log
        ELSE (attempt_log::jsonb || jsonb_build_array(jsonb_build_object(
            'attempt', attempts, 'state', state, 'claimed_at', stopline_rfc3339(claimed_at),
            'at', stopline_rfc3339(:now), 'worker', lease_owner, 'class', 'lease_expired',
            'message', 'the lease expired before the worker recorded an outcome',
            'outcome', 'abandoned')))::json END,
    lease_owner = :worker,
    lease_expires_at = COALESCE(
        CAST(CAST(:leases AS jsonb) ->> automation AS timestamptz), :expires_at),
    claimed_at = :now
WHERE id = (
    SELECT id FROM items
    WHERE state_class = 'work'
      -- the state itself, too: a class column edited by hand never makes a stop state work
      AND state IN ('observing', 'classified', 'approved', 'delivering', 'pending_readback',
                    'revision_prepared')
      AND next_eligible_at <= :now
      AND (lease_owner IS NULL OR lease_expires_at <= :now)
      AND attempts < max_attempts
      AND NOT (state = 'revision_prepared' AND lease_owner IS NOT NULL)
      AND (CAST(:automations AS text[]) IS NULL
           OR automation = ANY (CAST(:automations AS text[])))
    ORDER BY next_eligible_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
RETURNING *;

-- name: claim_batch
-- The claim of up to :limit items at once (a worker that commits in groups): the same
-- rules, the same columns, each claimed row with its own new fencing token. The rows are
-- picked and locked in a CTE first, so SKIP LOCKED is evaluated once. Each claimed row comes
-- with its last event and upgrade seal (the e_ columns and legacy_seal, as current_item reads
-- them), for the check of a fresh claim. They are read from the statement's snapshot: a write
-- committed between that snapshot and the row lock shows as a row whose head is not that
-- event, and the store reads such a row again (``claim_checked``).
WITH picked AS (
    SELECT id FROM items
    WHERE state_class = 'work'
      -- the state itself, too: a class column edited by hand never makes a stop state work
      AND state IN ('observing', 'classified', 'approved', 'delivering', 'pending_readback',
                    'revision_prepared')
      AND next_eligible_at <= :now
      AND (lease_owner IS NULL OR lease_expires_at <= :now)
      AND attempts < max_attempts
      AND NOT (state = 'revision_prepared' AND lease_owner IS NOT NULL)
      AND (CAST(:automations AS text[]) IS NULL
           OR automation = ANY (CAST(:automations AS text[])))
    ORDER BY next_eligible_at
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
), claimed AS (
UPDATE items SET
    attempts = attempts + 1,
    lease_token = lease_token + 1,
    version = version + 1,
    attempt_log = CASE WHEN lease_owner IS NULL THEN attempt_log
        ELSE (attempt_log::jsonb || jsonb_build_array(jsonb_build_object(
            'attempt', attempts, 'state', state, 'claimed_at', stopline_rfc3339(claimed_at),
            'at', stopline_rfc3339(:now), 'worker', lease_owner, 'class', 'lease_expired',
            'message', 'the lease expired before the worker recorded an outcome',
            'outcome', 'abandoned')))::json END,
    lease_owner = :worker,
    lease_expires_at = COALESCE(
        CAST(CAST(:leases AS jsonb) ->> automation AS timestamptz), :expires_at),
    claimed_at = :now
FROM picked
WHERE items.id = picked.id
RETURNING items.*
)
SELECT c.*,
    e.item_id AS e_item_id, e.seq AS e_seq, e.at AS e_at, e.command AS e_command,
    e.actor AS e_actor, e.from_state AS e_from_state, e.to_state AS e_to_state, e.reasons AS e_reasons,
    e.digests AS e_digests, e.detail AS e_detail, e.prev_hash AS e_prev_hash, e.hash AS e_hash,
    l.seal AS legacy_seal
FROM claimed c
LEFT JOIN events e ON e.item_id = c.id
    AND e.seq = (SELECT MAX(m.seq) FROM events m WHERE m.item_id = c.id)
LEFT JOIN legacy_seals l ON l.item_id = e.item_id AND l.head = e.hash;

-- name: sweepable
-- Steps that no claim may take any more: budget spent, or a revision whose lease ran out.
SELECT * FROM items
WHERE state_class = 'work'
  -- the state itself, too, as in the claim: a class column edited by hand is never swept
  AND state IN ('observing', 'classified', 'approved', 'delivering', 'pending_readback',
                'revision_prepared')
  AND (lease_owner IS NULL OR lease_expires_at <= :now)
  AND (attempts >= max_attempts OR (state = 'revision_prepared' AND lease_owner IS NOT NULL))
ORDER BY next_eligible_at
LIMIT :limit;

-- name: next_due
-- When a step next becomes claimable or sweepable: its due time, or the end of a live lease
-- (a dead worker's lease on the last attempt is swept to exhausted when it ends).
SELECT MIN(CASE WHEN lease_owner IS NOT NULL AND lease_expires_at > next_eligible_at
                THEN lease_expires_at ELSE next_eligible_at END) AS at FROM items
WHERE state_class = 'work' AND (attempts < max_attempts OR lease_owner IS NOT NULL)
  -- the state itself, too, as in the claim: a class column edited by hand is never due work
  AND state IN ('observing', 'classified', 'approved', 'delivering', 'pending_readback',
                'revision_prepared')
  AND (CAST(:automations AS text[]) IS NULL OR automation = ANY (CAST(:automations AS text[])));

-- name: renew
-- Extends a live lease of the current token. It leaves the version alone: a renewal is not a
-- decision, and the holder's next commit must not lose its compare-and-set to its own renewal.
UPDATE items SET lease_expires_at = :expires_at
WHERE id = :id AND lease_owner = :worker AND lease_token = :token AND lease_expires_at > :now;

-- name: insert_item
INSERT INTO items (id, automation, key, state, state_class, version, seq, head, created_at,
    updated_at, attempts, max_attempts, next_eligible_at, lease_owner, lease_token,
    lease_expires_at, claimed_at, attempt_log, data, state_since, severity_rank,
    search_text)
VALUES (:id, :automation, :key, :state, :state_class, :version, :seq, :head, :created_at,
    :updated_at, :attempts, :max_attempts, :next_eligible_at, :lease_owner, :lease_token,
    :lease_expires_at, :claimed_at, :attempt_log, :data, :created_at, :severity_rank,
    :search_text)
ON CONFLICT (automation, key) DO NOTHING;

-- name: insert_event
INSERT INTO events (item_id, seq, at, command, actor, from_state, to_state, reasons, digests,
    detail, prev_hash, hash)
VALUES (:item_id, :seq, :at, :command, :actor, :from_state, :to_state, :reasons, :digests,
    :detail, :prev_hash, :hash);

-- name: get_item
SELECT * FROM items WHERE id = :id;

-- name: find_item
SELECT * FROM items WHERE automation = :automation AND key = :key;

-- name: list_items
SELECT * FROM items
WHERE (CAST(:state AS text) IS NULL OR state = :state)
  AND (CAST(:automation AS text) IS NULL OR automation = :automation)
  AND (CAST(:state_class AS text) IS NULL OR state_class = :state_class)
  AND (CAST(:key AS text) IS NULL OR key = :key)
ORDER BY updated_at, id
LIMIT :limit;

-- name: list_items_newest
SELECT * FROM items
WHERE (CAST(:state AS text) IS NULL OR state = :state)
  AND (CAST(:automation AS text) IS NULL OR automation = :automation)
  AND (CAST(:state_class AS text) IS NULL OR state_class = :state_class)
  AND (CAST(:key AS text) IS NULL OR key = :key)
ORDER BY updated_at DESC, id DESC
LIMIT :limit;

-- name: count_by_state
SELECT state, COUNT(*) AS n, MIN(updated_at) AS oldest FROM items GROUP BY state ORDER BY state;

-- name: history
SELECT * FROM events WHERE item_id = :id ORDER BY seq;

-- name: all_events
SELECT * FROM events ORDER BY item_id, seq;

-- name: all_items
SELECT * FROM items ORDER BY id;

-- name: upsert_automation
INSERT INTO automations (name, policy, version, updated_at)
VALUES (:name, :policy, :version, :updated_at)
ON CONFLICT (name) DO UPDATE SET policy = excluded.policy, version = excluded.version,
    updated_at = excluded.updated_at
WHERE automations.version <> excluded.version;

-- name: get_automation
SELECT * FROM automations WHERE name = :name;

-- name: list_actors
SELECT * FROM actors ORDER BY name;

-- name: get_actor
SELECT * FROM actors WHERE name = :name;

-- name: upsert_actor
-- Sent after lock_registry, in its transaction, as every registry change is.
INSERT INTO actors (name, roles, active, created_at, updated_at)
VALUES (:name, :roles, :active, :at, :at)
ON CONFLICT (name) DO UPDATE SET roles = excluded.roles, active = excluded.active,
    updated_at = excluded.updated_at;

-- name: last_actor_event
SELECT hash FROM actor_events ORDER BY id DESC LIMIT 1;

-- name: insert_actor_event
INSERT INTO actor_events (at, actor, change, detail, prev_hash, hash)
VALUES (:at, :actor, :change, :detail, :prev_hash, :hash);

-- name: list_actor_events
SELECT * FROM actor_events ORDER BY id;

-- name: insert_token
INSERT INTO tokens (hash, actor, created_at) VALUES (:hash, :actor, :at);

-- name: token_actor
SELECT actor FROM tokens WHERE hash = :hash AND revoked_at IS NULL;

-- name: revoke_tokens
UPDATE tokens SET revoked_at = :at WHERE actor = :actor AND revoked_at IS NULL;

-- name: get_idempotency
SELECT * FROM idempotency WHERE key = :key;

-- name: insert_idempotency
INSERT INTO idempotency (key, command_digest, item_id, decision, at)
VALUES (:key, :command_digest, :item_id, :decision, :at);

-- name: record_refusal
-- One row per (item, command, actor, reason codes), keyed by their digest :group_key: a
-- refusal seen before adds one to its count and moves its last time.
INSERT INTO refusals (group_key, item_id, command, actor, reasons, count, first_at, last_at)
VALUES (:group_key, :item_id, :command, :actor, :reasons, 1, :at, :at)
ON CONFLICT (group_key) DO UPDATE SET
    count = refusals.count + 1,
    first_at = LEAST(refusals.first_at, excluded.first_at),
    last_at = GREATEST(refusals.last_at, excluded.last_at);

-- name: get_schedule
SELECT last_run_at FROM schedules WHERE automation = :automation;

-- name: set_schedule
INSERT INTO schedules (automation, last_run_at) VALUES (:automation, :at)
ON CONFLICT (automation) DO UPDATE SET last_run_at = excluded.last_run_at;

-- name: apply_decision
-- An applied decision as ONE statement, in autocommit: the compare-and-set update of the item,
-- its one event, the documents its row references that were not stored yet (:doc_digests,
-- :doc_bodies, by digest) and (when :ikey is not null) the idempotency key commit together or
-- not at all. A lost race updates nothing and so inserts nothing: n = 0.
{{apply_writes}}
SELECT (SELECT COUNT(*) FROM event) AS n, (SELECT COUNT(*) FROM keyed) AS k;

-- name: apply_decision_ledgered
-- apply_decision for a decision whose event goes into the ledger, sent once the shard's lock
-- (lock_ledger) is held, in that transaction: it also returns the shard's last entry, read in
-- this statement's snapshot, taken after the lock, so no later append can come before it.
{{apply_writes}}
SELECT (SELECT COUNT(*) FROM event) AS n, (SELECT COUNT(*) FROM keyed) AS k,
    last.n AS last_n, last.hash AS last_hash
FROM (SELECT 1) AS one
LEFT JOIN LATERAL (SELECT n, hash FROM ledger WHERE shard = :shard ORDER BY n DESC LIMIT 1) AS last
    ON true;

-- name: apply_writes
-- The writes of apply_decision, a fragment: the compare-and-set update, then (only when it
-- took) the event, the new documents and the idempotency key.
WITH updated AS (
    UPDATE items SET state = :state, state_class = :state_class, version = :version,
        seq = :seq, head = :head, updated_at = :updated_at, attempts = :attempts,
        max_attempts = :max_attempts, next_eligible_at = :next_eligible_at,
        lease_owner = :lease_owner, lease_token = :lease_token,
        lease_expires_at = :lease_expires_at, claimed_at = :claimed_at,
        attempt_log = :attempt_log, data = :data,
        severity_rank = :severity_rank, search_text = :search_text,
        state_since = CASE WHEN CAST(:from_state AS text) IS NULL
            OR CAST(:from_state AS text) <> :to_state THEN CAST(:at AS timestamptz)
            ELSE state_since END
    WHERE id = :id AND version = :expected_version
    RETURNING id
), event AS (
    INSERT INTO events (item_id, seq, at, command, actor, from_state, to_state, reasons,
        digests, detail, prev_hash, hash)
    SELECT id, :seq, :at, :command, :actor, CAST(:from_state AS text), :to_state, :reasons,
        :digests, :detail, :prev_hash, :hash
    FROM updated
    RETURNING item_id
), docs AS (
    INSERT INTO documents (digest, body)
    SELECT d.digest, d.body
    FROM unnest(CAST(:doc_digests AS text[]), CAST(:doc_bodies AS text[])) AS d(digest, body)
    WHERE EXISTS (SELECT 1 FROM updated)
    ON CONFLICT (digest) DO NOTHING
    RETURNING digest
), keyed AS (
    INSERT INTO idempotency (key, command_digest, item_id, decision, at)
    SELECT :ikey, :command_digest, id, :decision, :at FROM updated
    WHERE CAST(:ikey AS text) IS NOT NULL
    RETURNING key
)

-- name: current_items
-- The rows of :ids (a text array) with their last events and upgrade seals, as current_item
-- reads one: what a listing checks each record against.
{{items_with_heads}}
WHERE i.id = ANY (CAST(:ids AS text[]));

-- name: head_event
-- The last event of an item by sequence (not by the item's head pointer, so a dropped or an
-- extra event shows), with the seal an upgrade recorded for it, if any.
SELECT e.*, l.seal AS legacy_seal FROM events e
LEFT JOIN legacy_seals l ON l.item_id = e.item_id AND l.head = e.hash
WHERE e.item_id = :id ORDER BY e.seq DESC LIMIT 1;

-- name: lock_ledger
-- Serialises the appends to one shard of the ledger (held to the end of the transaction).
SELECT pg_advisory_xact_lock(hashtext('stopline.ledger'), CAST(:shard AS integer));

-- name: last_ledger
SELECT n, hash FROM ledger WHERE shard = :shard ORDER BY n DESC LIMIT 1;

-- name: last_ledgers
-- The last entry of each shard in :shards (a group commit reads them once their locks are held).
SELECT s.shard, last.n, last.hash
FROM unnest(CAST(:shards AS integer[])) AS s(shard)
JOIN LATERAL (
    SELECT n, hash FROM ledger WHERE ledger.shard = s.shard ORDER BY n DESC LIMIT 1
) AS last ON true;

-- name: insert_ledger
INSERT INTO ledger (shard, n, at, kind, item_id, seq, event_hash, prev_hash, hash)
VALUES (:shard, :n, :at, :kind, :item_id, :seq, :event_hash, :prev_hash, :hash);

-- name: list_ledger
SELECT * FROM ledger ORDER BY shard, n;

-- name: item_ledger
-- One item's entries, each with the hash of the entry before it in its shard (as stored).
SELECT l.*, p.hash AS before_hash FROM ledger l
LEFT JOIN ledger p ON p.shard = l.shard AND p.n = l.n - 1
WHERE l.item_id = :id ORDER BY l.shard, l.n;

-- name: count_actor_events
SELECT COUNT(*) AS n FROM actor_events;

-- name: lock_registry
-- Serialises registry appends (actors, tokens, policies): the chain never forks.
SELECT pg_advisory_xact_lock(hashtext('stopline.actor_events'));

-- name: list_tokens
SELECT hash, actor, revoked_at FROM tokens ORDER BY hash;

-- name: live_tokens_of
SELECT hash FROM tokens WHERE actor = :actor AND revoked_at IS NULL ORDER BY hash;

-- name: list_automations
SELECT name, policy, version FROM automations ORDER BY name;

-- name: registry_ledger
-- item_ledger of the registry's own entries (:registry), so that registry_text can share a
-- statement with an item's reads (guard_snapshot).
SELECT l.*, p.hash AS before_hash FROM ledger l
LEFT JOIN ledger p ON p.shard = l.shard AND p.n = l.n - 1
WHERE l.item_id = :registry ORDER BY l.shard, l.n;

-- name: guard_snapshot
-- What the check before an acting call reads, as ONE statement (so one snapshot, and no
-- transaction to open and close): the row, its last event and that event's upgrade seal
-- (current_item), the item's history and its ledger entries, each as one JSON array
-- (guard_history, guard_ledger), and the registry's stamp (registry_stamp). No row: no such
-- item.
SELECT c.*, {{guard_history}} AS history_json, {{guard_ledger}} AS ledger_json, r.*
FROM ({{current_item}}) c, ({{registry_stamp}}) r;

-- name: guard_snapshots
-- guard_snapshot for each item of :ids (a text array) in one statement: one snapshot, one
-- round trip for the checks of several items before they act, and the registry's stamp
-- computed once for them all. One row per item found.
SELECT c.*, {{guard_history}} AS history_json, {{guard_ledger}} AS ledger_json, r.*
FROM ({{current_items}}) c, ({{registry_stamp}}) r;

-- name: guard_history
-- A fragment: the history of item c.id as one JSON array of its rows in sequence (each json
-- column as its stored text, times in ISO form).
(SELECT json_agg(json_build_object(
    'item_id', e.item_id, 'seq', e.seq, 'at', e.at, 'command', e.command,
    'actor', e.actor, 'from_state', e.from_state, 'to_state', e.to_state,
    'reasons', e.reasons::text, 'digests', e.digests::text, 'detail', e.detail::text,
    'prev_hash', e.prev_hash, 'hash', e.hash) ORDER BY e.seq)::text
 FROM events e WHERE e.item_id = c.id)

-- name: guard_ledger
-- A fragment: the ledger entries of item c.id as one JSON array, as item_ledger reads them.
(SELECT json_agg(l)::text FROM (
    SELECT l.*, p.hash AS before_hash FROM ledger l
    LEFT JOIN ledger p ON p.shard = l.shard AND p.n = l.n - 1
    WHERE l.item_id = c.id ORDER BY l.shard, l.n) l)

-- name: registry_stamp
-- Whether any row registry_text reads changed, without reading what the rows hold: per table
-- the SHA-256 of every row version's (xmin, ctid), in ctid order. Any insert or update writes
-- a row version with a new xmin (the id of the transaction that wrote it, which no statement
-- can choose) at a ctid no live version holds at that moment, and a delete drops one: rows
-- that differ give another stamp, and an equal stamp means the rows last folded (actors.py,
-- ``registry``). A hash that does not resist a chosen input would not do here: XIDs come in
-- order and can be spent until a wanted one comes, so a sum of 64-bit row hashes can be
-- aimed at by rewriting a dozen rows. A row written again unchanged (a dump restored, VACUUM
-- FULL) gives a new stamp, and the rows are read whole once. This scans the rows' headers,
-- a few times cheaper per row than writing out their text, and sends 320 bytes. (An empty
-- table's part is '-': concat_ws would skip a NULL, and another table's part take its place.)
SELECT concat_ws(' ',
    coalesce((SELECT encode(sha256(convert_to(
        string_agg(xmin::text || ':' || ctid::text, ',' ORDER BY ctid), 'UTF8')), 'hex')
     FROM actor_events), '-'),
    coalesce((SELECT encode(sha256(convert_to(
        string_agg(xmin::text || ':' || ctid::text, ',' ORDER BY ctid), 'UTF8')), 'hex')
     FROM actors), '-'),
    coalesce((SELECT encode(sha256(convert_to(
        string_agg(xmin::text || ':' || ctid::text, ',' ORDER BY ctid), 'UTF8')), 'hex')
     FROM tokens), '-'),
    coalesce((SELECT encode(sha256(convert_to(
        string_agg(xmin::text || ':' || ctid::text, ',' ORDER BY ctid), 'UTF8')), 'hex')
     FROM automations), '-'),
    -- the registry's ledger entries and the entry before each in its shard (before_hash)
    coalesce((SELECT encode(sha256(convert_to(string_agg(l.xmin::text || ':' || l.ctid::text || ':'
        || coalesce(p.xmin::text || ':' || p.ctid::text, '-'), ',' ORDER BY l.ctid), 'UTF8')),
        'hex')
     FROM ledger l LEFT JOIN ledger p ON p.shard = l.shard AND p.n = l.n - 1
     WHERE l.item_id = :registry), '-')) AS registry_stamp;

-- name: registry_text
-- What the registry is folded from, in one statement (so in one snapshot): each query's rows
-- in their order as one JSON array (ISO times whatever the session's DateStyle; a json column
-- as stored). Different rows never give the same text, so text equal to that of the rows last
-- folded means the same rows, and the worker keeps that fold (actors.py, ``registry``).
SELECT
    (SELECT json_agg(r)::text FROM ({{list_actor_events}}) r) AS actor_events,
    (SELECT json_agg(r)::text FROM ({{list_actors}}) r) AS actors,
    (SELECT json_agg(r)::text FROM ({{list_tokens}}) r) AS tokens,
    (SELECT json_agg(r)::text FROM ({{list_automations}}) r) AS automations,
    (SELECT json_agg(r)::text FROM ({{registry_ledger}}) r) AS ledger;

-- name: list_idempotency
SELECT key, command_digest, item_id, decision FROM idempotency ORDER BY key;

-- name: item_classes
SELECT id, state, state_class FROM items ORDER BY id;

-- name: insert_legacy_seal
INSERT INTO legacy_seals (item_id, head, seal, at) VALUES (:item_id, :head, :seal, :at);

-- name: list_legacy_seals
SELECT item_id, head, seal FROM legacy_seals ORDER BY item_id;

-- name: insert_document
-- A document of an item row (stopline.store.documents), stored once by its digest.
INSERT INTO documents (digest, body) VALUES (:digest, :body) ON CONFLICT (digest) DO NOTHING;

-- name: get_documents
SELECT digest, body FROM documents WHERE digest = ANY (CAST(:digests AS text[]));

-- name: list_documents
SELECT digest, body FROM documents;

-- name: referencing_items
-- The rows whose data may hold a reference to a document (the store parses the rest).
SELECT id, data FROM items WHERE strpos(CAST(data AS text), '"$doc"') > 0;

-- name: set_item_data
UPDATE items SET data = :data WHERE id = :id;

-- name: open_items
-- How many of an automation's items have not ended (their class is work or stop), counted up
-- to :most: discovery needs to know only whether there is room. Read through the partial
-- indexes of the work and stop items, so a store of many ended items is not read for it (an
-- index of its own would cost every transition a write, see docs/performance-log.md).
SELECT count(*) AS n FROM (
    SELECT 1 FROM items
    WHERE automation = :automation AND (state_class = 'work' OR state_class = 'stop')
    LIMIT :most
) AS open_rows;

-- name: discovery_turn_wait
-- How long the discovery turn below may be waited for: local to the transaction that takes it.
SELECT set_config('lock_timeout', :ms, true);

-- name: take_discovery_turn
-- One discovery pass of an automation at a time across every scheduler (store/discovery_turns.py):
-- held by the session until end_discovery_turn, or until the connection ends.
SELECT pg_advisory_lock(hashtext('stopline.discovery'), hashtext(:automation));

-- name: end_discovery_turn
SELECT pg_advisory_unlock(hashtext('stopline.discovery'), hashtext(:automation)) AS ended;
