-- Insights queries that PostgreSQL writes its own way (its JSON functions).

-- name: attempt_outcomes
-- Every entry of every item's attempt log, by how the attempt ended.
SELECT a.value->>'outcome' AS outcome, COUNT(*) AS n
FROM items CROSS JOIN LATERAL json_array_elements(items.attempt_log) AS a(value)
GROUP BY outcome
ORDER BY outcome;
