-- Insights queries that SQLite writes its own way (its JSON functions).

-- name: attempt_outcomes
-- Every entry of every item's attempt log, by how the attempt ended.
SELECT json_extract(a.value, '$.outcome') AS outcome, COUNT(*) AS n
FROM items, json_each(items.attempt_log) AS a
GROUP BY outcome
ORDER BY outcome;
