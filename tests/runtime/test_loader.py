"""``load_app`` (runtime/loader.py): what an APP argument may name, and a clear
``AppLoadError`` for everything else: never a traceback out of ``stopline run``."""

from __future__ import annotations

import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from stopline.runtime.automation import App
from stopline.runtime.loader import AppLoadError, load_app

AUTOMATION = """
from __future__ import annotations

import os
from dataclasses import dataclass

from stopline import App, Automation, Evidence


@dataclass
class Settings:  # a dataclass needs its module in sys.modules
    host: str = "db-1"


def observe(ctx) -> Evidence:
    return Evidence({"host": Settings().host})


one = Automation("ops", lambda ctx: [], observe, observe)
many = [one, Automation("desk", lambda ctx: [], observe, observe)]
app = App([one])
mixed = [one, "not an automation"]


def build() -> App:
    return App([one])


def broken() -> App:
    return App([one, one])  # names must be unique


def unset() -> App:
    return App([Automation(os.environ["NO_SUCH_SETTING"], lambda ctx: [], observe, observe)])
"""


@pytest.fixture
def app_file(tmp_path: Path) -> Path:
    path = tmp_path / f"app_{uuid.uuid4().hex[:8]}.py"
    path.write_text(textwrap.dedent(AUTOMATION))
    return path


@pytest.mark.parametrize(
    ("attribute", "names"),
    [("app", ["ops"]), ("one", ["ops"]), ("many", ["ops", "desk"]), ("build", ["ops"])],
)
def test_an_app_an_automation_a_list_of_them_or_a_function_making_one(
    app_file: Path, attribute: str, names: list[str]
) -> None:
    loaded = load_app(f"{app_file}:{attribute}")
    assert isinstance(loaded, App) and [a.name for a in loaded.automations] == names


def test_a_module_in_the_current_folder_is_found_by_name(
    app_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As ``python -m`` would: the console script alone does not put the folder on the path."""
    monkeypatch.chdir(app_file.parent)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(app_file.parent))])
    assert [a.name for a in load_app(f"{app_file.stem}:app").automations] == ["ops"]
    sys.modules.pop(app_file.stem, None)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{file}", "APP must be module:attribute"),
        ("{file}:", "APP must be module:attribute"),
        (":app", "APP must be module:attribute"),
        ("{folder}/no_such_app.py:app", "no such file: "),
        ("{file}:nothing", "has no attribute 'nothing'"),
        ("{file}:mixed", "is a list, not an App or Automation"),
        ("{file}:broken", "broken failed: ValueError: automation names must be unique"),
        ("{file}:unset", "unset failed: KeyError: 'NO_SUCH_SETTING'"),
        ("{folder}/raises.py:app", "importing .* failed: RuntimeError: no config"),
    ],
)
def test_anything_else_is_an_app_load_error_that_says_what(
    app_file: Path, spec: str, message: str
) -> None:
    (app_file.parent / "raises.py").write_text("raise RuntimeError('no config')\n")
    with pytest.raises(AppLoadError, match=message):
        load_app(spec.format(file=app_file, folder=app_file.parent))
