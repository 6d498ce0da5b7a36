-- Leaner rows (stopline.store.documents): each large document of an item's data (its stored
-- JSON 256 bytes or more: a proposal, evidence, a review packet) is written once here, keyed by
-- the SHA-256 of its stored JSON, and the item row holds {"$doc": "<digest>"} in its place. A
-- transition that leaves a document unchanged writes nothing of it again. Rows written before
-- this migration keep their documents inline and read as before. `text`, not `json`: the body
-- is kept byte for byte, so its digest recomputes from it.
CREATE TABLE documents (
    digest  text COLLATE "C" PRIMARY KEY,
    body    text NOT NULL
);

-- Content-addressed, so append-only: a body is never rewritten or removed.
CREATE TRIGGER documents_append_only
BEFORE UPDATE OR DELETE ON documents
FOR EACH ROW EXECUTE FUNCTION stopline_append_only();
CREATE TRIGGER documents_no_truncate BEFORE TRUNCATE ON documents
FOR EACH STATEMENT EXECUTE FUNCTION stopline_append_only();
