-- Named queries of worker heartbeats that only PostgreSQL has (stopline.store.heartbeats).

-- name: server_now
-- The server's own clock (not the transaction's start): what a worker's clock is compared with.
SELECT now FROM clock_timestamp() AS now;
