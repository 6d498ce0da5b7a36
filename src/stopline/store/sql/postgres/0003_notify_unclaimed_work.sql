-- Notify only about work nobody holds: a step whose claim rode on the commit that ended the
-- previous one (lease_owner set) needs no wake-up, and every NOTIFY takes a lock that
-- serialises commits across sessions.

DROP TRIGGER items_notify_work ON items;

CREATE TRIGGER items_notify_work
AFTER INSERT OR UPDATE OF state, next_eligible_at ON items
FOR EACH ROW WHEN (NEW.state_class = 'work' AND NEW.lease_owner IS NULL)
EXECUTE FUNCTION stopline_notify_work();
