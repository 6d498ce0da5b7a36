"""A real crash at every durable boundary of delivery and revision, on both real targets.

For each name in ``crash_points.BOUNDARIES`` a real ``stopline run`` process is started with
``STOPLINE_CRASH_AT=<name>`` and dies there (``os._exit``: no cleanup, no lease release, as after
SIGKILL). A normal worker process then takes over: the delivery ends ``completed``; a revision
goes ``revision_failed`` when its lease expires, the same ``revise`` command resumes it, and it
ends ``revision_completed``. Either way there is exactly one remote object per artifact on the
real target, and ``stopline verify`` is clean.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

import pytest

from stopline.runtime import delivery_driver, step
from stopline.runtime.crash_points import (
    BOUNDARIES,
    CRASHED,
    DELIVERY_BOUNDARIES,
    REVISION_BOUNDARIES,
)

from .apps.digest_app import KEYS
from .conftest import Env

# one step at a time, in groups, and claimed ahead, and as greenlets of one thread
LAB_MODES = ("single", "batch", "ahead", "lockstep")

# What the real target and the item hold right after the crash at each boundary:
# (state, objects on the target, artifacts bound) for a delivery;
# (objects holding the revised content, artifacts bound by update) for a revision.
AFTER_DELIVERY_CRASH: dict[str, tuple[str, int, int]] = {
    "executed": ("delivering", 0, 0),
    "staged": ("delivering", 0, 0),
    "before_create": ("delivering", 0, 0),
    "after_create": ("delivering", 1, 0),
    "bound": ("delivering", 1, 1),
    "delivered": ("pending_readback", 2, 2),
    "before_readback": ("pending_readback", 2, 2),
    "after_readback": ("pending_readback", 2, 2),
}
AFTER_REVISION_CRASH: dict[str, tuple[int, int]] = {
    "revision_staged": (0, 0),
    "before_update": (0, 0),
    "after_update": (1, 0),
    "revision_bound": (1, 1),
    "revision_before_readback": (2, 2),
    "revision_after_readback": (2, 2),
}
SITES = ["directory", pytest.param("webdav", marks=pytest.mark.slow)]


def crash(env: Env, boundary: str) -> None:
    done = env.work_cli(crash=boundary)
    assert done.returncode == CRASHED, (boundary, done.returncode, done.stderr[-2000:])
    assert f"crashing at boundary {boundary}" in done.stderr


def recover(env: Env) -> None:
    """A normal worker process takes over once the dead worker's lease has ended."""
    env.expire_leases()
    done = env.work_cli()
    assert done.returncode == 0, done.stderr[-2000:]


def matching(env: Env, item: dict[str, Any]) -> int:
    """How many artifacts' bound objects hold exactly the item's current content."""
    target = env.site.target()
    count = 0
    for record in item["artifacts"]:
        if record["remote_id"] is None:
            continue
        if target.read(record["remote_id"]).readback_hash == record["content_hash"]:
            count += 1
    return count


@pytest.mark.parametrize("site", SITES, indirect=True)
@pytest.mark.parametrize("boundary", DELIVERY_BOUNDARIES)
def test_delivery_survives_a_crash_at(env: Env, boundary: str) -> None:
    """Killed at this delivery boundary, then restarted: completed, one object per artifact."""
    crash(env, boundary)
    state, objects, bound = AFTER_DELIVERY_CRASH[boundary]
    item = env.show()
    assert item["state"] == state
    assert item["lease"] is not None or boundary == "executed"  # the dead worker's lease
    assert len(env.site.objects()) == objects
    assert sum(1 for a in item["artifacts"] if a["remote_id"]) == bound

    recover(env)
    item = env.assert_one_object_per_artifact()
    assert item["state"] == "completed"
    assert item["review_packet"]["void"] is False
    creates = env.calls("create")
    assert len({c["arg"] for c in creates}) == len(KEYS)
    assert len(creates) == len(KEYS)  # a lost outcome is found, never created twice
    env.verify_clean()


@pytest.mark.parametrize("site", SITES, indirect=True)
@pytest.mark.parametrize("boundary", REVISION_BOUNDARIES)
def test_revision_survives_a_crash_at(env: Env, boundary: str) -> None:
    """Killed at this revision boundary: lease expiry fails it, the same revise completes it."""
    before = {a["key"]: a["remote_id"] for a in env.deliver()["artifacts"]}
    env.applied(*env.revise(), state="revision_prepared")
    request = env.show()["revision"]["request_digest"]

    crash(env, boundary)
    item = env.show()
    assert item["state"] == "revision_prepared" and item["lease"] is not None
    revised, updated = AFTER_REVISION_CRASH[boundary]
    assert matching(env, item) == revised
    assert sum(1 for a in item["artifacts"] if a["last_op"] == "update") == updated

    recover(env)  # the dead worker's lease ended: the sweep fails the revision
    item = env.show()
    assert item["state"] == "revision_failed"
    assert item["revision"]["failure"]["reasons"] == ["lease_expired"]

    env.applied(*env.revise(), state="revision_prepared")
    assert env.show()["revision"]["request_digest"] == request
    recover(env)
    item = env.assert_one_object_per_artifact()
    assert item["state"] == "revision_completed"
    assert {a["key"]: a["remote_id"] for a in item["artifacts"]} == before
    assert all("Revised because" in a["body"] for a in item["artifacts"])
    assert len(env.calls("create")) == len(KEYS)  # only the first delivery created
    env.verify_clean()


def _parametrized(test: Any, name: str) -> list[str]:
    for mark in getattr(test, "pytestmark", ()):
        if mark.name == "parametrize" and mark.args[0] == name:
            return list(mark.args[1])
    return []


def _crash_points_in_worker() -> set[str]:
    """Every boundary name the worker's code passes to ``crash_point``, directly or through
    the ``bound=`` boundary of ``_write_all`` (which its binds pass on)."""
    names: set[str] = set()
    for module in (step, delivery_driver):
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("crash_point", "_write_all"):
                values = [*node.args, *(k.value for k in node.keywords)]
                names |= {
                    a.value
                    for a in values
                    if isinstance(a, ast.Constant) and isinstance(a.value, str)
                }
    return names


def test_every_boundary_has_a_crash_test() -> None:
    """The crash tests cover exactly BOUNDARIES, and the worker crashes at no unnamed point."""
    tested = _parametrized(test_delivery_survives_a_crash_at, "boundary") + _parametrized(
        test_revision_survives_a_crash_at, "boundary"
    )
    assert sorted(tested) == sorted(BOUNDARIES)
    assert len(set(BOUNDARIES)) == len(BOUNDARIES)
    assert set(AFTER_DELIVERY_CRASH) == set(DELIVERY_BOUNDARIES)
    assert set(AFTER_REVISION_CRASH) == set(REVISION_BOUNDARIES)
    assert _crash_points_in_worker() == set(BOUNDARIES)
