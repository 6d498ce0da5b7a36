-- Insights queries that SQLite writes its own way (its JSON functions).

-- name: attempt_outcomes
-- Every entry of every item's attempt log, by how the attempt ended.
SELECT json_extract(a.value, '$.outcome') AS outcome, COUNT(*) AS n
FROM items, json_each(items.attempt_log) AS a
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
        COALESCE((SELECT d.body FROM documents d
                  WHERE d.digest = json_extract(items.data, '$.proposal."$doc"')
                    AND json_valid(d.body)),
                 json_extract(items.data, '$.proposal')) AS proposal,
        COALESCE((SELECT d.body FROM documents d
                  WHERE d.digest = json_extract(items.data, '$.report."$doc"')
                    AND json_valid(d.body)),
                 json_extract(items.data, '$.report')) AS report,
        COALESCE((SELECT d.body FROM documents d
                  WHERE d.digest = json_extract(items.data, '$.exception."$doc"')
                    AND json_valid(d.body)),
                 json_extract(items.data, '$.exception')) AS exception,
        COALESCE((SELECT d.body FROM documents d
                  WHERE d.digest = json_extract(items.data, '$.account."$doc"')
                    AND json_valid(d.body)),
                 json_extract(items.data, '$.account')) AS account,
        COALESCE((SELECT d.body FROM documents d
                  WHERE d.digest = json_extract(items.data, '$.revision."$doc"')
                    AND json_valid(d.body)),
                 json_extract(items.data, '$.revision')) AS revision
    FROM items
    WHERE items.state_class = 'stop'
      AND (:state IS NULL OR items.state = :state)
      AND (:automation IS NULL OR items.automation = :automation)
), keyed AS (
    SELECT items.*,
        COALESCE(
            (SELECT MAX(e.at) FROM events e
             WHERE e.item_id = items.id AND (e.from_state IS NULL OR e.from_state <> e.to_state)),
            items.created_at) AS since,
        CASE json_extract(items.data, '$.severity') WHEN 'info' THEN 0 WHEN 'low' THEN 1 WHEN 'high' THEN 3
            WHEN 'critical' THEN 4 ELSE 2 END AS sev,
        LOWER(items.automation || '/' || items.key
            || ' ' || COALESCE(json_extract(docs.proposal, '$.action'), '')
            || ' ' || COALESCE(json_extract(docs.proposal, '$.target'), '')
            || ' ' || COALESCE(json_extract(docs.proposal, '$.rationale'), '')
            || ' ' || COALESCE(json_extract(docs.report, '$.data.summary'), '')
            || ' ' || COALESCE(json_extract(docs.exception, '$.owner'), '')
            || ' ' || COALESCE(json_extract(docs.exception, '$.why'), '')
            || ' ' || COALESCE(json_extract(docs.account, '$.last_error.class'), '')
            || ' ' || COALESCE(json_extract(docs.account, '$.last_error.message'), '')
            || ' ' || COALESCE(json_extract(docs.revision, '$.failure.reasons'), '')) AS haystack
    FROM items JOIN docs ON docs.doc_id = items.id
)

-- name: stop_page
-- One page, keyset-paged: :sort is oldest (since, id), newest (since desc, id desc) or
-- severity (sev desc, since, id); :after_* is the key of the last row of the previous page.
{{stop_keyed}}
SELECT * FROM keyed
WHERE (:text IS NULL OR instr(haystack, :text) > 0)
  AND (:stopped_before IS NULL OR since < :stopped_before)
  AND (:after_id IS NULL
    OR (:sort = 'oldest' AND (since > :after_since OR (since = :after_since AND id > :after_id)))
    OR (:sort = 'newest' AND (since < :after_since OR (since = :after_since AND id < :after_id)))
    OR (:sort = 'severity' AND (sev < :after_sev OR (sev = :after_sev
        AND (since > :after_since OR (since = :after_since AND id > :after_id))))))
ORDER BY
    CASE WHEN :sort = 'severity' THEN sev ELSE 0 END DESC,
    CASE WHEN :sort = 'newest' THEN since END DESC,
    CASE WHEN :sort = 'newest' THEN id END DESC,
    since, id
LIMIT :limit;

-- name: stop_counts
-- How many stopped items match the same filters, by state, and the earliest `since` of each.
{{stop_keyed}}
SELECT state, COUNT(*) AS n, MIN(since) AS oldest FROM keyed
WHERE (:text IS NULL OR instr(haystack, :text) > 0)
  AND (:stopped_before IS NULL OR since < :stopped_before)
GROUP BY state
ORDER BY state;
