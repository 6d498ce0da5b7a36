-- Insights queries that PostgreSQL writes its own way (its JSON functions).

-- name: attempt_outcomes
-- Every entry of every item's attempt log, by how the attempt ended.
SELECT a.value->>'outcome' AS outcome, COUNT(*) AS n
FROM items CROSS JOIN LATERAL json_array_elements(items.attempt_log) AS a(value)
GROUP BY outcome
ORDER BY outcome;

-- The stopped items of the inbox, in time independent of the backlog: each row keeps
-- `state_since` (when the item entered its current state) and `severity_rank` (the rank of
-- data.severity in core/severity.py; migration 0008), and partial indexes over stopped items
-- hold them in the orders a page follows, so a page reads its own rows, not every stopped
-- item. A search (:text, lower-cased) matches `search_text`, the line each stopped item's row
-- keeps (core/search.py; migration 0009): it reads the stopped items that pass the other
-- filters, one column each, without their documents.

-- name: stop_where
-- A fragment: the filters every inbox query applies to `items`.
items.state_class = 'stop'
  AND (CAST(:state AS TEXT) IS NULL OR items.state = CAST(:state AS TEXT))
  AND (CAST(:automation AS TEXT) IS NULL OR items.automation = CAST(:automation AS TEXT))
  AND (CAST(:stopped_before AS timestamptz) IS NULL
       OR items.state_since < CAST(:stopped_before AS timestamptz))
  AND (CAST(:text AS TEXT) IS NULL OR strpos(items.search_text, CAST(:text AS TEXT)) > 0)

-- name: stop_page_oldest
-- One page, oldest stop first, after the key (:after_since, :after_id) of the last row of the
-- previous page.
SELECT items.*, items.state_since AS since, items.severity_rank AS sev FROM items
WHERE {{stop_where}}
  AND (CAST(:after_id AS TEXT) IS NULL
       OR (items.state_since, items.id) > (CAST(:after_since AS timestamptz), CAST(:after_id AS TEXT)))
ORDER BY items.state_since, items.id
LIMIT :limit;

-- name: stop_page_newest
-- One page, newest stop first.
SELECT items.*, items.state_since AS since, items.severity_rank AS sev FROM items
WHERE {{stop_where}}
  AND (CAST(:after_id AS TEXT) IS NULL
       OR (items.state_since, items.id) < (CAST(:after_since AS timestamptz), CAST(:after_id AS TEXT)))
ORDER BY items.state_since DESC, items.id DESC
LIMIT :limit;

-- name: stop_page_severity
-- One page, most severe first, then oldest stop first.
SELECT items.*, items.state_since AS since, items.severity_rank AS sev FROM items
WHERE {{stop_where}}
  AND (CAST(:after_id AS TEXT) IS NULL
       OR items.severity_rank < CAST(:after_sev AS INTEGER)
       OR (items.severity_rank = CAST(:after_sev AS INTEGER)
           AND (items.state_since, items.id) > (CAST(:after_since AS timestamptz), CAST(:after_id AS TEXT))))
ORDER BY items.severity_rank DESC, items.state_since, items.id
LIMIT :limit;

-- name: stop_counts
-- How many stopped items match the same filters, by state, and the earliest `since` of each.
SELECT items.state, COUNT(*) AS n, MIN(items.state_since) AS oldest FROM items
WHERE {{stop_where}}
GROUP BY items.state
ORDER BY items.state;

-- name: stuck_work
-- Work-state items with no recorded decision since :before (no step moved them), longest
-- unmoved first; keyset pages on (updated_at, id) after :after_at / :after_id.
SELECT * FROM items
WHERE state_class = 'work' AND updated_at < :before
  AND (CAST(:after_id AS TEXT) IS NULL OR updated_at > :after_at OR (updated_at = :after_at AND id > :after_id))
ORDER BY updated_at, id
LIMIT :limit;

-- name: stuck_count
SELECT COUNT(*) AS n FROM items WHERE state_class = 'work' AND updated_at < :before;
