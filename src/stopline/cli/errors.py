"""The error every CLI command raises for malformed input."""

from __future__ import annotations


class UsageError(Exception):
    """Malformed input: exit 2, nothing written."""
