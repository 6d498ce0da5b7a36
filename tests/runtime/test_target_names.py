"""Remote holds are kept by target name, so an app must not reach one system under two names:
two items could then each hold one object, once under each name, and the revision of one
would rewrite what the other's record says it delivered. ``App`` refuses it when it is built.
Two systems under one name are allowed: they only share a space of ids, and an id both
answered stops the second item (``remote_object_held``), which is safe."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stopline import App, Automation
from stopline.runtime.target_names import shared_target_problem, target_name
from stopline.targets.directory import DirectoryTarget


def nothing(ctx: Any) -> list[str]:
    return []


def app_of(*targets: Any) -> App:
    automations = [
        Automation(name=f"a{i}", discover=nothing, observe=nothing, propose=nothing, target=t)
        for i, t in enumerate(targets)
    ]
    return App(automations)


def test_one_directory_under_two_names_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"one system .* under two names, 'tickets' and 'notes'"):
        app_of(DirectoryTarget(tmp_path, name="tickets"), DirectoryTarget(tmp_path, name="notes"))


def test_one_directory_reached_through_a_symlink_is_still_one_system(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(ValueError, match="under two names"):
        app_of(
            DirectoryTarget(tmp_path / "real", name="a"),
            DirectoryTarget(tmp_path / "link", name="b"),
        )


def test_one_system_under_one_name_and_two_systems_are_allowed(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    app_of(DirectoryTarget(one), DirectoryTarget(one))  # one name, one system: one hold space
    app_of(DirectoryTarget(one, name="a"), DirectoryTarget(two, name="b"))
    app_of(DirectoryTarget(one), DirectoryTarget(two))  # one name, two systems: ids shared
    shared = DirectoryTarget(one, name="a")
    app_of(shared, shared)


class Undescribed:
    """A target that does not describe itself cannot be compared."""

    def __init__(self, name: str) -> None:
        self.name = name


def test_targets_that_do_not_describe_themselves_are_not_compared() -> None:
    assert shared_target_problem({"a": Undescribed("x"), "b": Undescribed("y")}) is None  # type: ignore[dict-item]


def test_the_name_of_a_target_whose_name_is_no_name_is_its_class() -> None:
    assert target_name(Undescribed("x")) == "x"  # type: ignore[arg-type]
    assert target_name(Undescribed("")) == "Undescribed"  # type: ignore[arg-type]
