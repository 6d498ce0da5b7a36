"""``stopline check APP``: placeholder, filled in below."""

from __future__ import annotations

from typing import Any


def add_check_command(add: Any) -> None:
    return None
