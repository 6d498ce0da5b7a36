-- Named queries of the SQLite store. Parameters are :name.

-- name: claim
-- Take the most overdue claimable item: a due work step, not leased (or its lease expired),
-- with budget left. Counting the attempt and fencing the lease happen in this one statement.
-- A lease that expired without an outcome is logged as an abandoned attempt. The lease ends
-- at :leases[automation] (each automation's own lease, a JSON object of end times) or, for an
-- automation the object does not name, at :expires_at.
UPDATE items SET
    attempts = attempts + 1,
    lease_token = lease_token + 1,
    version = version + 1,
    attempt_log = CASE WHEN lease_owner IS NULL THEN attempt_log ELSE json_insert(
        attempt_log, '$[#]', json_object(
            'attempt', attempts, 'state', state, 'claimed_at', claimed_at, 'at', :now,
            'worker', lease_owner, 'class', 'lease_expired',
            'message', 'the lease expired before the worker recorded an outcome',
            'outcome', 'abandoned')) END,
    lease_owner = :worker,
    lease_expires_at = COALESCE(
        (SELECT value FROM json_each(:leases) WHERE key = items.automation), :expires_at),
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
      AND (:automations IS NULL OR automation IN (SELECT value FROM json_each(:automations)))
    ORDER BY next_eligible_at
    LIMIT 1
)
RETURNING *;

-- name: claim_batch
-- The claim of up to :limit items at once (a worker that commits in groups): the same
-- rules, the same columns, each claimed row with its own new fencing token.
UPDATE items SET
    attempts = attempts + 1,
    lease_token = lease_token + 1,
    version = version + 1,
    attempt_log = CASE WHEN lease_owner IS NULL THEN attempt_log ELSE json_insert(
        attempt_log, '$[#]', json_object(
            'attempt', attempts, 'state', state, 'claimed_at', claimed_at, 'at', :now,
            'worker', lease_owner, 'class', 'lease_expired',
            'message', 'the lease expired before the worker recorded an outcome',
            'outcome', 'abandoned')) END,
    lease_owner = :worker,
    lease_expires_at = COALESCE(
        (SELECT value FROM json_each(:leases) WHERE key = items.automation), :expires_at),
    claimed_at = :now
WHERE id IN (
    SELECT id FROM items
    WHERE state_class = 'work'
      -- the state itself, too: a class column edited by hand never makes a stop state work
      AND state IN ('observing', 'classified', 'approved', 'delivering', 'pending_readback',
                    'revision_prepared')
      AND next_eligible_at <= :now
      AND (lease_owner IS NULL OR lease_expires_at <= :now)
      AND attempts < max_attempts
      AND NOT (state = 'revision_prepared' AND lease_owner IS NOT NULL)
      AND (:automations IS NULL OR automation IN (SELECT value FROM json_each(:automations)))
    ORDER BY next_eligible_at
    LIMIT :limit
)
RETURNING *;

-- name: current_items
-- The rows of :ids (a JSON array) with their last events and upgrade seals, as current_item
-- reads one: in the claim's own transaction, what the check of a fresh claim holds them to;
-- and what a listing checks each record against.
{{items_with_heads}}
WHERE i.id IN (SELECT value FROM json_each(:ids));

-- name: sweepable
-- Steps that no claim may take any more: budget spent, or a revision whose lease ran out.
SELECT * FROM items
WHERE state_class = 'work'
  -- the state itself, too, as in the claim: a class column edited by hand is never swept
  AND state IN ('observing', 'classified', 'approved', 'delivering', 'pending_readback',
                'revision_prepared')
  AND (lease_owner IS NULL OR lease_expires_at <= :now)
  AND (attempts >= max_attempts OR (state = 'revision_prepared' AND lease_owner IS NOT NULL))
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
  AND (:automations IS NULL OR automation IN (SELECT value FROM json_each(:automations)));

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

-- name: update_item
-- Compare-and-set on the version the decision was made from.
UPDATE items SET state = :state, state_class = :state_class, version = :version, seq = :seq,
    head = :head, updated_at = :updated_at, attempts = :attempts, max_attempts = :max_attempts,
    next_eligible_at = :next_eligible_at, lease_owner = :lease_owner, lease_token = :lease_token,
    lease_expires_at = :lease_expires_at, claimed_at = :claimed_at, attempt_log = :attempt_log,
    data = :data, state_since = CASE WHEN :from_state IS NULL OR :from_state <> :to_state THEN :at
        ELSE state_since END, severity_rank = :severity_rank, search_text = :search_text
WHERE id = :id AND version = :expected_version;

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
WHERE (:state IS NULL OR state = :state)
  AND (:automation IS NULL OR automation = :automation)
  AND (:state_class IS NULL OR state_class = :state_class)
  AND (:key IS NULL OR key = :key)
ORDER BY updated_at, id
LIMIT :limit;

-- name: list_items_newest
SELECT * FROM items
WHERE (:state IS NULL OR state = :state)
  AND (:automation IS NULL OR automation = :automation)
  AND (:state_class IS NULL OR state_class = :state_class)
  AND (:key IS NULL OR key = :key)
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
    count = count + 1,
    first_at = min(first_at, excluded.first_at),
    last_at = max(last_at, excluded.last_at);

-- name: get_schedule
SELECT last_run_at FROM schedules WHERE automation = :automation;

-- name: set_schedule
INSERT INTO schedules (automation, last_run_at) VALUES (:automation, :at)
ON CONFLICT (automation) DO UPDATE SET last_run_at = excluded.last_run_at;

-- name: head_event
-- The last event of an item by sequence (not by the item's head pointer, so a dropped or an
-- extra event shows), with the seal an upgrade recorded for it, if any.
SELECT e.*, l.seal AS legacy_seal FROM events e
LEFT JOIN legacy_seals l ON l.item_id = e.item_id AND l.head = e.hash
WHERE e.item_id = :id ORDER BY e.seq DESC LIMIT 1;

-- name: lock_ledger
-- Serialises the appends to one shard of the ledger (SQLite's write lock already does).
SELECT 1 WHERE :shard IS NOT NULL;

-- name: last_ledger
SELECT n, hash FROM ledger WHERE shard = :shard ORDER BY n DESC LIMIT 1;

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
SELECT 1;

-- name: list_tokens
SELECT hash, actor, revoked_at FROM tokens ORDER BY hash;

-- name: live_tokens_of
SELECT hash FROM tokens WHERE actor = :actor AND revoked_at IS NULL ORDER BY hash;

-- name: list_automations
SELECT name, policy, version FROM automations ORDER BY name;

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
-- The documents named in :digests (a JSON array of digests).
SELECT digest, body FROM documents WHERE digest IN (SELECT value FROM json_each(:digests));

-- name: list_documents
SELECT digest, body FROM documents;

-- name: referencing_items
-- The rows whose data may hold a reference to a document (the store parses the rest).
SELECT id, data FROM items WHERE instr(data, '"$doc"') > 0;

-- name: set_item_data
UPDATE items SET data = :data WHERE id = :id;

-- name: registry_text
-- What the registry is folded from, in one statement (so in one snapshot): each query's rows in
-- their order as one JSON array of rows, each row the SQL literal of every column it reads
-- (quote(): a number, a string and a blob never write alike). Rows that fold differently never
-- give the same text (the one pair that does, 0.0 and -0.0, the fold cannot tell apart either),
-- so text equal to that of the rows last folded means the same fold, and the worker keeps it
-- (actors.py, ``registry``). A column the fold reads must be listed here: a
-- test edits each one behind the store's back and wants the next read to see it.
SELECT
    (SELECT json_group_array(json_array(quote(id), quote(at), quote(actor), quote(change),
        quote(detail), quote(prev_hash), quote(hash))) FROM ({{list_actor_events}})) AS actor_events,
    (SELECT json_group_array(json_array(quote(name), quote(roles), quote(active),
        quote(created_at), quote(updated_at))) FROM ({{list_actors}})) AS actors,
    (SELECT json_group_array(json_array(quote(hash), quote(actor), quote(revoked_at)))
        FROM ({{list_tokens}})) AS tokens,
    (SELECT json_group_array(json_array(quote(name), quote(policy), quote(version)))
        FROM ({{list_automations}})) AS automations,
    (SELECT json_group_array(json_array(quote(shard), quote(n), quote(at), quote(kind),
        quote(item_id), quote(seq), quote(event_hash), quote(prev_hash), quote(hash),
        quote(before_hash))) FROM ({{item_ledger}})) AS ledger;

-- name: open_items
-- How many of an automation's items have not ended (their class is work or stop), counted up
-- to :most: discovery needs to know only whether there is room. Read through the index by
-- class (``+automation`` keeps SQLite off the index by automation, which would read every
-- ended item of it too; an index of its own would cost every transition a write, see
-- docs/performance-log.md).
SELECT count(*) AS n FROM (
    SELECT 1 FROM items
    WHERE +automation = :automation AND state_class IN ('work', 'stop')
    LIMIT :most
) AS open_rows;
