"""Numbers in a query string, read the one way every shell reads them."""

from __future__ import annotations


def whole_number(text: str, low: int, high: int) -> int | None:
    """``text`` as an integer from ``low`` to ``high``, else ``None``. Only ASCII digits: other
    characters Python calls digits are refused (``int("٣")`` is 3 and ``int("²")`` raises),
    and a number longer than ``high`` is refused unread (``int()`` raises past 4,300 digits)."""
    digits = text.lstrip("0") or "0"
    if not text.isascii() or not text.isdigit() or len(digits) > len(str(high)):
        return None
    value = int(digits)
    return value if low <= value <= high else None
