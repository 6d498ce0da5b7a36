-- The items of each automation that have not ended: discovery counts them against the
-- automation's max_open_items at every pass, and a store of many ended items should not be
-- read whole for it.

CREATE INDEX items_open ON items (automation) WHERE state_class <> 'terminal';
