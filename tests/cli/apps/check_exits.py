"""An app whose worker process ends by itself at its first discovery (as a crash in the app's
own code would end it): `stopline check` reports that, it does not pass the app."""

from __future__ import annotations

import os
from typing import Any

from stopline import App, Automation, Evidence, Proposal


def discover(ctx: Any) -> list[str]:
    os._exit(7)  # the process ends here: no exception, no cleanup


app = App(
    [
        Automation(
            name="exits",
            every=3600,
            discover=discover,
            observe=lambda ctx: Evidence({}),
            propose=lambda ctx: Proposal("restart", {}),
        )
    ]
)
