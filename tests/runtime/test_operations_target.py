"""The target ``reconcile`` and ``publish`` use when no app is given: rebuilt from what the
registry chain recorded for the automation (runtime/operations.py), or none at all, never an
exception out of the command."""

from __future__ import annotations

import shutil
from pathlib import Path

from stopline.controller import Controller
from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.operations import target_for
from stopline.runtime.outcomes import Evidence
from stopline.runtime.scheduler import Scheduler
from stopline.store import Store
from stopline.targets.directory import DirectoryTarget


def _observe(ctx: HookContext) -> Evidence:
    return Evidence({})


def test_a_recorded_target_that_cannot_be_rebuilt_is_no_target(
    store: Store, tmp_path: Path
) -> None:
    """The folder the directory target was registered with is now a file: rebuilding it fails
    with an OSError, and the command finds no target (``target_unavailable``) instead of
    raising. An automation with no target, and one never registered, have none either."""
    out = tmp_path / "out"
    app = App(
        [
            Automation("ops", lambda ctx: [], _observe, _observe, target=DirectoryTarget(out)),
            Automation("plain", lambda ctx: [], _observe, _observe),
        ]
    )
    Scheduler(store, app).register()
    commands = Controller(store, trust=None)
    rebuilt = target_for(commands, "ops", None)
    assert isinstance(rebuilt, DirectoryTarget) and rebuilt.describe()["root"] == str(out)
    shutil.rmtree(out)
    out.write_text("a file where the folder was")
    assert target_for(commands, "ops", None) is None
    assert target_for(commands, "plain", None) is None
    assert target_for(commands, "nobody", None) is None
