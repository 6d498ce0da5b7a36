-- Insights queries that PostgreSQL writes its own way (its JSON functions).

-- name: attempt_outcomes
-- Every entry of every item's attempt log, by how the attempt ended.
SELECT a.value->>'outcome' AS outcome, COUNT(*) AS n
FROM items CROSS JOIN LATERAL json_array_elements(items.attempt_log) AS a(value)
GROUP BY outcome
ORDER BY outcome;

-- The stopped items of the inbox. `since`: when the item entered its current stop state (the
-- last event that changed the state; an approval short of the count does not). `sev`: the rank
-- of data.severity (core/severity.py; absent: normal). `haystack`: the text a search matches
-- (automation/key and the reason the item stopped), lower-cased; :text comes lower-cased.

-- name: stop_keyed
-- A fragment (not run alone): the stopped items that match the filters, with when each
-- entered its state (since), its severity rank (sev) and the text a search matches. `docs`:
-- the documents the search reads, each from the documents table when the row holds a
-- reference to it ({"$doc": digest}, stopline.store.documents), else inline.
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
    WHERE items.state_class = 'stop'
      AND (CAST(:state AS TEXT) IS NULL OR items.state = CAST(:state AS TEXT))
      AND (CAST(:automation AS TEXT) IS NULL OR items.automation = CAST(:automation AS TEXT))
), keyed AS (
    SELECT items.*,
        COALESCE(
            (SELECT MAX(e.at) FROM events e
             WHERE e.item_id = items.id AND (e.from_state IS NULL OR e.from_state <> e.to_state)),
            items.created_at) AS since,
        CASE items.data->>'severity' WHEN 'info' THEN 0 WHEN 'low' THEN 1 WHEN 'high' THEN 3
            WHEN 'critical' THEN 4 ELSE 2 END AS sev,
        LOWER(items.automation || '/' || items.key
            || ' ' || COALESCE(docs.proposal->>'action', '')
            || ' ' || COALESCE(docs.proposal->>'target', '')
            || ' ' || COALESCE(docs.proposal->>'rationale', '')
            || ' ' || COALESCE(docs.report->'data'->>'summary', '')
            || ' ' || COALESCE(docs.exception->>'owner', '')
            || ' ' || COALESCE(docs.exception->>'why', '')
            || ' ' || COALESCE(docs.account->'last_error'->>'class', '')
            || ' ' || COALESCE(docs.account->'last_error'->>'message', '')
            || ' ' || COALESCE(docs.revision->'failure'->>'reasons', '')) AS haystack
    FROM items JOIN docs ON docs.doc_id = items.id
)

-- name: stop_page
-- One page, keyset-paged: :sort is oldest (since, id), newest (since desc, id desc) or
-- severity (sev desc, since, id); :after_* is the key of the last row of the previous page.
{{stop_keyed}}
SELECT * FROM keyed
WHERE (CAST(:text AS TEXT) IS NULL OR strpos(haystack, CAST(:text AS TEXT)) > 0)
  AND (CAST(:stopped_before AS timestamptz) IS NULL OR since < CAST(:stopped_before AS timestamptz))
  AND (CAST(:after_id AS TEXT) IS NULL
    OR (CAST(:sort AS TEXT) = 'oldest' AND (since > CAST(:after_since AS timestamptz) OR (since = CAST(:after_since AS timestamptz) AND id > CAST(:after_id AS TEXT))))
    OR (CAST(:sort AS TEXT) = 'newest' AND (since < CAST(:after_since AS timestamptz) OR (since = CAST(:after_since AS timestamptz) AND id < CAST(:after_id AS TEXT))))
    OR (CAST(:sort AS TEXT) = 'severity' AND (sev < CAST(:after_sev AS INTEGER) OR (sev = CAST(:after_sev AS INTEGER)
        AND (since > CAST(:after_since AS timestamptz) OR (since = CAST(:after_since AS timestamptz) AND id > CAST(:after_id AS TEXT)))))))
ORDER BY
    CASE WHEN CAST(:sort AS TEXT) = 'severity' THEN sev ELSE 0 END DESC,
    CASE WHEN CAST(:sort AS TEXT) = 'newest' THEN since END DESC,
    CASE WHEN CAST(:sort AS TEXT) = 'newest' THEN id END DESC,
    since, id
LIMIT :limit;

-- name: stop_counts
-- How many stopped items match the same filters, by state, and the earliest `since` of each.
{{stop_keyed}}
SELECT state, COUNT(*) AS n, MIN(since) AS oldest FROM keyed
WHERE (CAST(:text AS TEXT) IS NULL OR strpos(haystack, CAST(:text AS TEXT)) > 0)
  AND (CAST(:stopped_before AS timestamptz) IS NULL OR since < CAST(:stopped_before AS timestamptz))
GROUP BY state
ORDER BY state;
