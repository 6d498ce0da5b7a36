-- PostgreSQL narrows its work notifications here; SQLite has none, so this version changes
-- nothing (both dialects keep the same version numbers).
SELECT 1;
