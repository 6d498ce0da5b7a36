-- Named queries of the remote objects' holds (stopline.store.remote_holds), the same in both
-- dialects.

-- name: take_remote
-- The first item to take (:target, :remote_id) holds it; a later take changes nothing.
INSERT INTO remote_holds (target, remote_id, item_id, artifact_key, held_at)
VALUES (:target, :remote_id, :item_id, :artifact_key, :at)
ON CONFLICT (target, remote_id) DO NOTHING;

-- name: remote_holder
SELECT item_id, artifact_key FROM remote_holds
WHERE target = :target AND remote_id = :remote_id;
