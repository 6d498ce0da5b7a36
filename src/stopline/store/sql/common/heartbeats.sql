-- Named queries of worker heartbeats (stopline.store.heartbeats), the same in both dialects.
-- Times are RFC 3339 UTC text; `stats` is JSON text.

-- name: beat
-- A worker's heartbeat: one row per worker, written again as it loops.
INSERT INTO worker_heartbeats (worker, host, pid, automations, started_at, seen_at, stats)
VALUES (:worker, :host, :pid, :automations, :started_at, :seen_at, :stats)
ON CONFLICT (worker) DO UPDATE SET seen_at = excluded.seen_at, stats = excluded.stats;

-- name: heartbeats
SELECT * FROM worker_heartbeats ORDER BY seen_at DESC, worker;

-- name: forget_heartbeats
-- Rows of workers not seen since :before (gone for good) are dropped.
DELETE FROM worker_heartbeats WHERE seen_at < :before;
