-- A search of the inbox in one column. Each item row keeps `search_text`: for an item in a stop
-- state, the lower-cased line a search matches (its automation/key and what says why it
-- stopped: core/search.py); for any other, null. It is written with the row by every decision
-- and derived from the row's own data, so `stopline verify` recomputes it
-- (`item/stop_key_mismatch`). The rows of stopped items written before this migration are
-- filled by its data step (stopline.store.schema), in Python, from their data with their
-- documents put back: the same function writes and checks it.
ALTER TABLE items ADD COLUMN search_text TEXT;
