"""Store errors: infrastructure and broken invariants (refusals are decisions, not errors)."""

from __future__ import annotations


class StoreError(Exception):
    """The store cannot do what was asked."""


class UnsupportedURL(StoreError):
    """The database URL names no store stopline has."""


class SchemaMismatch(StoreError):
    """The database schema is newer than this stopline knows, or not migrated."""
