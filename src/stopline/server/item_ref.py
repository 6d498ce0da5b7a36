"""What an item reference in a URL may look like (``AUTOMATION/KEY``), for every route that
takes one: the JSON API's, the web inbox's and the OpenAPI document's."""

from __future__ import annotations

import re

ITEM_PATTERN = "^[A-Za-z0-9_@:-][A-Za-z0-9_.@:-]{0,199}$"
ITEM_RE = re.compile(ITEM_PATTERN)
