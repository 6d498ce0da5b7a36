"""An app whose items all stop: automation ``desk`` discovers the keys in
``STOPLINE_TEST_STOP_KEYS`` (comma separated), and its observe hook cannot decide, so every item
stops in ``exception`` on its first step."""

from __future__ import annotations

import os
from typing import Any

from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import NeedsEyes


def discover(ctx: Any) -> list[str]:
    return [k for k in os.environ.get("STOPLINE_TEST_STOP_KEYS", "").split(",") if k]


def observe(ctx: HookContext) -> NeedsEyes:
    return NeedsEyes("nobody can tell", owner="desk")


def propose(ctx: HookContext) -> Any:
    raise AssertionError("observe always stops first")


app = App([Automation(name="desk", discover=discover, observe=observe, propose=propose)])
