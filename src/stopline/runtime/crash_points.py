"""The durable boundaries of a delivery and a revision, by name, and the crash test hook.

With ``STOPLINE_CRASH_AT=<name>`` the worker process dies (``os._exit``, no cleanup, as after
SIGKILL) when it reaches the named point. Every point sits on a durable boundary: right after a
commit, or right before or after a remote call. ``tests/delivery`` runs a real crash at each
name listed here, and fails when a name has no crash test or the driver passes an unnamed one.
"""

from __future__ import annotations

import logging
import os

CRASH_ENV = "STOPLINE_CRASH_AT"
DELIVERY_BOUNDARIES = (
    "executed",  # after the commit approved -> delivering (authority re-checked)
    "staged",  # after the commit of the rendered artifacts and their QA evidence
    "before_create",  # after the intent commit, before the create call
    "after_create",  # after the create call returned, before its identity is bound
    "bound",  # after the commit binding the remote identity (created or found)
    "delivered",  # after the commit delivering -> pending_readback
    "before_readback",  # claimed pending_readback, before the first read
    "after_readback",  # every object read, before the final commit (-> completed)
)
REVISION_BOUNDARIES = (
    "revision_staged",  # after the commit of the revised artifacts and their QA evidence
    "before_update",  # after the update intent commit, before the conditional update call
    "after_update",  # after the update call returned, before it is bound
    "revision_bound",  # after the commit binding the updated object
    "revision_before_readback",  # every object updated, before the first read
    "revision_after_readback",  # every object read, before the gate commit
)
BOUNDARIES = DELIVERY_BOUNDARIES + REVISION_BOUNDARIES
CRASHED = 137  # the exit status of a process that crashed at a boundary

log = logging.getLogger("stopline.worker")


class CrashPoints:
    """Dies at the boundary named by ``STOPLINE_CRASH_AT`` (read once, when made)."""

    def __init__(self) -> None:
        self.at = os.environ.get(CRASH_ENV, "")

    def __call__(self, name: str) -> None:
        assert name in BOUNDARIES, f"{name} is not a named boundary"
        if self.at == name:
            log.error("crashing at boundary %s (%s)", name, CRASH_ENV)
            os._exit(CRASHED)
