-- Which item holds each remote object. A target keeps one object per idempotency key, and an
-- item binds each of its artifacts to one object; nothing in a single item's record stops a
-- target from answering two items with one object (a target that keeps objects by content,
-- say), and a revision of the one would then rewrite the other's delivered object. Before an
-- item binds an object a target created or found, it takes the object here, keyed by the
-- target's name and the object's remote id: the first item to take it holds it, and any other
-- item answered with it stops for a person (runtime/delivery_driver.py). Rows are never
-- changed or dropped by stopline. Times are RFC 3339 UTC text.

CREATE TABLE remote_holds (
    target        text COLLATE "C" NOT NULL,
    remote_id     text COLLATE "C" NOT NULL,
    item_id       text NOT NULL,
    artifact_key  text NOT NULL,
    held_at       text NOT NULL,
    PRIMARY KEY (target, remote_id)
);

-- A hold is never moved to another item nor let go.
CREATE TRIGGER remote_holds_append_only
BEFORE UPDATE OR DELETE ON remote_holds
FOR EACH ROW EXECUTE FUNCTION stopline_append_only();
CREATE TRIGGER remote_holds_no_truncate BEFORE TRUNCATE ON remote_holds
FOR EACH STATEMENT EXECUTE FUNCTION stopline_append_only();
