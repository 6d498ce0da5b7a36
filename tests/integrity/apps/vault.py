"""The tamper lab's app: payments that need approval, notes delivered to a folder, and every
acting call written down, so a test can tell exactly what ran.

Load it as ``stopline run tests/integrity/apps/vault.py:app``. It runs in the current folder:
notes go to ``./vault-drafts`` (the target describes itself by that relative path, so every
copy of a lab database has the same policy version), and every execute hook call and every
remote create, update, read and publish is appended, one JSON object a line, to the file named
by ``STOPLINE_TEST_LOG`` (:func:`read_log`).

What an item does is chosen by the prefix of its key:

===========  ==================================================================================
``pay``      a refund an ``approver`` must approve; executing it delivers nothing remote
``dual``     a transfer two distinct ``approver`` s must approve
``note``     a note that needs no approval, created in the folder; revisable, and published
             by a ``publisher`` once an operator approved its review packet
``revfail``  like ``note``, but its revise hook always fails (``revision_failed``)
``review``   a report: ``ready_for_review``
``eyes``     ``observe`` cannot decide: ``exception``
``broken``   ``observe`` always times out: ``exhausted`` after two attempts
===========  ==================================================================================

Environment: ``STOPLINE_TEST_KEYS`` (comma separated), ``STOPLINE_TEST_LOG`` (required),
``STOPLINE_TEST_LEASE`` (seconds, default 30), ``STOPLINE_TEST_NO_REVISE=1`` (no revise hook),
and a park point for the process tests: ``STOPLINE_TEST_PARK`` names a call (``execute``,
``read``, ``revise``) that, the first time it is made (on the item ``STOPLINE_TEST_PARK_KEY``
names, by key, or by id for ``read``), writes the file ``STOPLINE_TEST_GATE + ".parked"`` and
waits until the file ``STOPLINE_TEST_GATE`` exists (at most two minutes). With
``STOPLINE_TEST_FAIL_FIRST=execute`` the first execute call (of that item) then raises
:class:`TransientError`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from stopline.core.artifacts import Artifact, Readback
from stopline.core.policy import ApprovalPolicy, ApprovalRule, DeliveryPolicy, RetryPolicy
from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import (
    Deliver,
    Evidence,
    NeedsEyes,
    Proposal,
    ReportForReview,
    TerminalError,
    TransientError,
)
from stopline.targets.base import RemoteRef
from stopline.targets.directory import DirectoryTarget

LOG_ENV = "STOPLINE_TEST_LOG"
KEYS_ENV = "STOPLINE_TEST_KEYS"
PARK_ENV = "STOPLINE_TEST_PARK"
PARK_KEY_ENV = "STOPLINE_TEST_PARK_KEY"
NO_REVISE_ENV = "STOPLINE_TEST_NO_REVISE"
GATE_ENV = "STOPLINE_TEST_GATE"
FAIL_FIRST_ENV = "STOPLINE_TEST_FAIL_FIRST"
LEASE_ENV = "STOPLINE_TEST_LEASE"
DRAFTS = "vault-drafts"
PARK_LIMIT = 120.0
# calls that act on the world ("webhook": a signed notification sent, written down by the tests)
ACTING = frozenset({"execute", "create", "update", "publish", "webhook"})

ACTORS: dict[str, tuple[str, ...]] = {
    "alice": ("approver", "operator"),
    "bob": ("approver",),
    "carol": ("operator",),
    "dana": ("viewer",),
    "rita": ("approver",),
    "paul": ("publisher",),
}


def record(call: str, **entry: Any) -> None:
    with open(os.environ[LOG_ENV], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"call": call, "pid": os.getpid(), **entry}, sort_keys=True) + "\n")


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def park(call: str, key: str) -> None:
    """Wait at ``call`` (on item ``key``) the first time it is made, if the test asked."""
    gate = os.environ.get(GATE_ENV, "")
    if os.environ.get(PARK_ENV) != call or not gate:
        return
    if os.environ.get(PARK_KEY_ENV, key) != key:
        return
    marker = Path(gate + ".parked")
    if marker.exists():
        return
    marker.write_text(str(os.getpid()))
    deadline = time.monotonic() + PARK_LIMIT
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.02)


def item_of(remote_id: str) -> str:
    """The item whose object ``remote_id`` is (the folder's slugs start with the item id)."""
    return "itm_" + remote_id.split("-")[1] if remote_id.startswith("itm-") else remote_id


def kind(key: str) -> str:
    return key.split("-", 1)[0]


class LoggedFolder:
    """A directory target under ``./vault-drafts`` that writes down every call."""

    name = "directory"

    def _target(self) -> DirectoryTarget:
        return DirectoryTarget(DRAFTS)

    def describe(self) -> dict[str, str]:
        return {"kind": "directory", "root": DRAFTS, "name": self.name}

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        item = idempotency_key.split(":", 1)[0]
        record("create", item=item, artifact=artifact.key, body=artifact.body, ikey=idempotency_key)
        return self._target().create(artifact, idempotency_key)

    def update(self, ref: RemoteRef, artifact: Artifact) -> RemoteRef:
        record(
            "update",
            item=item_of(ref.remote_id),
            artifact=artifact.key,
            body=artifact.body,
            remote_id=ref.remote_id,
        )
        return self._target().update(ref, artifact)

    def read(self, remote_id: str) -> Readback:
        record("read", item=item_of(remote_id), remote_id=remote_id)
        park("read", item_of(remote_id))
        return self._target().read(remote_id)

    def find(self, idempotency_key: str) -> RemoteRef | None:
        return self._target().find(idempotency_key)

    def publish(self, ref: RemoteRef) -> str:
        record("publish", item=item_of(ref.remote_id), remote_id=ref.remote_id)
        return self._target().publish(ref)


def discover(ctx: HookContext) -> Iterable[str]:
    return [k.strip() for k in os.environ.get(KEYS_ENV, "").split(",") if k.strip()]


def observe(ctx: HookContext) -> Any:
    assert ctx.item is not None
    k = kind(ctx.item.key)
    if k == "broken":
        raise TransientError(f"{ctx.item.key}: upstream timed out")
    if k == "eyes":
        return NeedsEyes("the vault cannot tell", owner="operators", evidence={"key": ctx.item.key})
    return Evidence({"key": ctx.item.key, "balance": 100}, classification=k)


def propose(ctx: HookContext) -> Any:
    assert ctx.item is not None
    key = ctx.item.key
    k = kind(key)
    if k == "review":
        return ReportForReview({"summary": f"{key} looks fine"})
    if k == "dual":
        return Proposal("transfer", {"amount": 500, "to": key}, target=key)
    if k in ("note", "revfail"):
        return Proposal("write", {"note": key}, target=DRAFTS)
    params: dict[str, Any] = {"amount": 10, "to": key}
    if ctx.rejection is not None:
        params["revised_after"] = ctx.rejection["reason"]
    return Proposal("refund", params, target=key, rationale="refund within policy")


def execute(ctx: HookContext) -> Any:
    assert ctx.item is not None and ctx.proposal is not None
    key = ctx.item.key
    record(
        "execute",
        key=key,
        item=ctx.item.id,
        digest=ctx.proposal["digest"],
        params=ctx.proposal["params"],
        approvals=[a["actor"] for a in ctx.proposal["approvals"]],
    )
    park("execute", key)
    if os.environ.get(FAIL_FIRST_ENV) == "execute" and os.environ.get(PARK_KEY_ENV, key) == key:
        marker = Path(os.environ[LOG_ENV] + ".failed-once")
        if not marker.exists():
            marker.write_text("1")
            raise TransientError("the payment service timed out")
    if kind(key) in ("note", "revfail"):
        body = f"The note for {key}, as proposed: {json.dumps(ctx.proposal['params'])}."
        return Deliver([Artifact("note", f"Note {key}", "a vault note", body)])
    return Deliver(result={"paid": ctx.proposal["params"].get("amount")})


def revise(ctx: HookContext, reason: str, current: Sequence[Artifact]) -> Sequence[Artifact]:
    assert ctx.item is not None
    record("revise", key=ctx.item.key, reason=reason)
    park("revise", ctx.item.key)
    if kind(ctx.item.key) == "revfail":
        raise TerminalError("the vault's revise hook fails for this note")
    return [
        Artifact(a.key, a.title, a.summary + " (revised)", a.body + f"\n\nRevised: {reason}")
        for a in current
    ]


def build() -> App:
    approver = ("approver",)
    automation = Automation(
        name="vault",
        discover=discover,
        observe=observe,
        propose=propose,
        execute=execute,
        revise=None if os.environ.get(NO_REVISE_ENV) else revise,
        target=LoggedFolder(),
        every=3600,
        lease_seconds=float(os.environ.get(LEASE_ENV, "30")),
        retry=RetryPolicy(max_attempts=2, base_delay=0.05, backoff=2.0, max_delay=0.2),
        approval=ApprovalPolicy(
            rules={
                "refund": ApprovalRule(roles=approver, approvals=1, max_evidence_age=86400),
                "transfer": ApprovalRule(roles=approver, approvals=2, max_evidence_age=86400),
                "write": ApprovalRule(approvals=0),
            }
        ),
        delivery=DeliveryPolicy(mode="publish", revisable=True, publish_roles=("publisher",)),
    )
    return App([automation], actors=ACTORS)


app = build()
