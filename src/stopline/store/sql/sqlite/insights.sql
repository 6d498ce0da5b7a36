-- Insights queries that SQLite writes its own way (its JSON functions).

-- name: attempt_outcomes
-- Every entry of every item's attempt log, by how the attempt ended.
SELECT json_extract(a.value, '$.outcome') AS outcome, COUNT(*) AS n
FROM items, json_each(items.attempt_log) AS a
GROUP BY outcome
ORDER BY outcome;

-- The stopped items of the inbox, in time independent of the backlog: each row keeps
-- `state_since` (when the item entered its current state) and `severity_rank` (the rank of
-- data.severity in core/severity.py; migration 0008), and partial indexes over stopped items
-- hold them in the orders a page follows, so a page reads its own rows, not every stopped
-- item. A search (:text, lower-cased) matches `search_text`, the line each stopped item's row
-- keeps (core/search.py; migration 0009): it reads the stopped items that pass the other
-- filters, one column each, without their documents. (SQLite names the index each query follows: with no statistics
-- its planner would take `items_due`, which holds every item.)

-- name: stop_where
-- A fragment: the filters every inbox query applies to `items`.
items.state_class = 'stop'
  AND (:state IS NULL OR items.state = :state)
  AND (:automation IS NULL OR items.automation = :automation)
  AND (:stopped_before IS NULL OR items.state_since < :stopped_before)
  AND (:text IS NULL OR instr(items.search_text, :text) > 0)

-- name: stop_page_oldest
-- One page, oldest stop first, after the key (:after_since, :after_id) of the last row of the
-- previous page.
SELECT items.*, items.state_since AS since, items.severity_rank AS sev FROM items INDEXED BY items_stop_since
WHERE {{stop_where}}
  AND (:after_id IS NULL
       OR (items.state_since, items.id) > (:after_since, :after_id))
ORDER BY items.state_since, items.id
LIMIT :limit;

-- name: stop_page_newest
-- One page, newest stop first.
SELECT items.*, items.state_since AS since, items.severity_rank AS sev FROM items INDEXED BY items_stop_since
WHERE {{stop_where}}
  AND (:after_id IS NULL
       OR (items.state_since, items.id) < (:after_since, :after_id))
ORDER BY items.state_since DESC, items.id DESC
LIMIT :limit;

-- name: stop_page_severity
-- One page, most severe first, then oldest stop first.
SELECT items.*, items.state_since AS since, items.severity_rank AS sev FROM items INDEXED BY items_stop_severity
WHERE {{stop_where}}
  AND (:after_id IS NULL
       OR items.severity_rank < :after_sev
       OR (items.severity_rank = :after_sev
           AND (items.state_since, items.id) > (:after_since, :after_id)))
ORDER BY items.severity_rank DESC, items.state_since, items.id
LIMIT :limit;

-- name: stop_counts
-- How many stopped items match the same filters, by state, and the earliest `since` of each.
SELECT items.state, COUNT(*) AS n, MIN(items.state_since) AS oldest FROM items INDEXED BY items_stop_state
WHERE {{stop_where}}
GROUP BY items.state
ORDER BY items.state;

-- name: stuck_work
-- Work-state items with no recorded decision since :before (no step moved them), longest
-- unmoved first; keyset pages on (updated_at, id) after :after_at / :after_id. Both read the
-- work items alone (`items_due` leads with the state class; without the hint SQLite's planner
-- took `items_state` and visited every stopped item).
SELECT * FROM items INDEXED BY items_due
WHERE state_class = 'work' AND updated_at < :before
  AND (CAST(:after_id AS TEXT) IS NULL OR updated_at > :after_at OR (updated_at = :after_at AND id > :after_id))
ORDER BY updated_at, id
LIMIT :limit;

-- name: stuck_count
SELECT COUNT(*) AS n FROM items INDEXED BY items_due
WHERE state_class = 'work' AND updated_at < :before;
