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
-- item. A search (:text, lower-cased) still reads every stopped item that passes the other
-- filters: the text it matches (automation/key and the reason the item stopped) is built from
-- the documents at query time.

-- name: stop_hits
-- A fragment (not run alone): the ids of the stopped items whose search text contains :text
-- (none is computed when :text is null). `docs`: the documents the search reads, each from the
-- documents table when the row holds a reference to it ({"$doc": digest},
-- stopline.store.documents), else inline.
WITH docs AS (
    SELECT items.id AS doc_id,
        COALESCE((SELECT CAST(d.body AS json) FROM documents d
                  WHERE d.digest = items.data->'proposal'->>'$doc'
                    AND encode(sha256(convert_to(d.body, 'UTF8')), 'hex') = d.digest),
                 items.data->'proposal') AS proposal,
        COALESCE((SELECT CAST(d.body AS json) FROM documents d
                  WHERE d.digest = items.data->'report'->>'$doc'
                    AND encode(sha256(convert_to(d.body, 'UTF8')), 'hex') = d.digest),
                 items.data->'report') AS report,
        COALESCE((SELECT CAST(d.body AS json) FROM documents d
                  WHERE d.digest = items.data->'exception'->>'$doc'
                    AND encode(sha256(convert_to(d.body, 'UTF8')), 'hex') = d.digest),
                 items.data->'exception') AS exception,
        COALESCE((SELECT CAST(d.body AS json) FROM documents d
                  WHERE d.digest = items.data->'account'->>'$doc'
                    AND encode(sha256(convert_to(d.body, 'UTF8')), 'hex') = d.digest),
                 items.data->'account') AS account,
        COALESCE((SELECT CAST(d.body AS json) FROM documents d
                  WHERE d.digest = items.data->'revision'->>'$doc'
                    AND encode(sha256(convert_to(d.body, 'UTF8')), 'hex') = d.digest),
                 items.data->'revision') AS revision
    FROM items
    WHERE items.state_class = 'stop' AND CAST(:text AS TEXT) IS NOT NULL
      AND (CAST(:state AS TEXT) IS NULL OR items.state = CAST(:state AS TEXT))
      AND (CAST(:automation AS TEXT) IS NULL OR items.automation = CAST(:automation AS TEXT))
), hits AS (
    SELECT items.id FROM items JOIN docs ON docs.doc_id = items.id
    WHERE strpos(LOWER(
            items.automation || '/' || items.key
            || ' ' || COALESCE(docs.proposal->>'action', '')
            || ' ' || COALESCE(docs.proposal->>'target', '')
            || ' ' || COALESCE(docs.proposal->>'rationale', '')
            || ' ' || COALESCE(docs.report->'data'->>'summary', '')
            || ' ' || COALESCE(docs.exception->>'owner', '')
            || ' ' || COALESCE(docs.exception->>'why', '')
            || ' ' || COALESCE(docs.account->'last_error'->>'class', '')
            || ' ' || COALESCE(docs.account->'last_error'->>'message', '')
            || ' ' || COALESCE(docs.revision->'failure'->>'reasons', '')),
        CAST(:text AS TEXT)) > 0
)

-- name: stop_where
-- A fragment: the filters every inbox query applies to `items`.
items.state_class = 'stop'
  AND (CAST(:state AS TEXT) IS NULL OR items.state = CAST(:state AS TEXT))
  AND (CAST(:automation AS TEXT) IS NULL OR items.automation = CAST(:automation AS TEXT))
  AND (CAST(:stopped_before AS timestamptz) IS NULL
       OR items.state_since < CAST(:stopped_before AS timestamptz))
  AND (CAST(:text AS TEXT) IS NULL OR items.id IN (SELECT id FROM hits))

-- name: stop_page_oldest
-- One page, oldest stop first, after the key (:after_since, :after_id) of the last row of the
-- previous page.
{{stop_hits}}
SELECT items.*, items.state_since AS since, items.severity_rank AS sev FROM items
WHERE {{stop_where}}
  AND (CAST(:after_id AS TEXT) IS NULL
       OR (items.state_since, items.id) > (CAST(:after_since AS timestamptz), CAST(:after_id AS TEXT)))
ORDER BY items.state_since, items.id
LIMIT :limit;

-- name: stop_page_newest
-- One page, newest stop first.
{{stop_hits}}
SELECT items.*, items.state_since AS since, items.severity_rank AS sev FROM items
WHERE {{stop_where}}
  AND (CAST(:after_id AS TEXT) IS NULL
       OR (items.state_since, items.id) < (CAST(:after_since AS timestamptz), CAST(:after_id AS TEXT)))
ORDER BY items.state_since DESC, items.id DESC
LIMIT :limit;

-- name: stop_page_severity
-- One page, most severe first, then oldest stop first.
{{stop_hits}}
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
{{stop_hits}}
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
