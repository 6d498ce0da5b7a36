-- Leaner rows (stopline.store.documents): each large document of an item's data (its stored
-- JSON 256 bytes or more: a proposal, evidence, a review packet) is written once here, keyed by
-- the SHA-256 of its stored JSON, and the item row holds {"$doc": "<digest>"} in its place. A
-- transition that leaves a document unchanged writes nothing of it again. Rows written before
-- this migration keep their documents inline and read as before.
CREATE TABLE documents (
    digest  TEXT PRIMARY KEY,
    body    TEXT NOT NULL
);

-- Content-addressed, so append-only: a body is never rewritten or removed.
CREATE TRIGGER documents_no_update BEFORE UPDATE ON documents
BEGIN SELECT RAISE(ABORT, 'documents are append-only'); END;
CREATE TRIGGER documents_no_delete BEFORE DELETE ON documents
BEGIN SELECT RAISE(ABORT, 'documents are append-only'); END;
